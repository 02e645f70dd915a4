package adapter

// The ack journal and the transport (docs/PROTOCOL.md §3, `deliver`): each
// line is put down with ONE write(2) on an O_APPEND descriptor, so that a
// kill tears at most the final line. os.File.Write would write the rest of
// a short write in a second call, which a kill can separate from the
// first; a short write is an error here instead.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
)

type journal struct{ fd int }

func openJournal(path string) (*journal, error) {
	fd, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("the ack journal %s: %w", path, err)
	}
	return &journal{fd}, nil
}

func openAppend(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND|syscall.O_CLOEXEC, 0o644)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// writeLine puts line (newline included) down with one write(2).
func writeLine(fd int, line []byte) error {
	for {
		n, err := syscall.Write(fd, line)
		if err == syscall.EINTR {
			continue // interrupted before writing anything
		}
		if err != nil {
			return err
		}
		if n != len(line) {
			return fmt.Errorf("short write: %d of %d bytes", n, len(line))
		}
		return nil
	}
}

// record writes one NDJSON record: fields in the order given.
func (j *journal) record(fields ...field) error {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(f.key))
		b.WriteByte(':')
		v, err := marshal(f.value)
		if err != nil {
			return err
		}
		b.Write(v)
	}
	b.WriteString("}\n")
	if err := writeLine(j.fd, b.Bytes()); err != nil {
		return fmt.Errorf("the ack journal: %w", err)
	}
	return nil
}

type field struct {
	key   string
	value interface{}
}

func marshal(v interface{}) ([]byte, error) {
	// Strings by the canonical escaping: encoding/json would escape <, >
	// and & in a resolver's reason.
	switch x := v.(type) {
	case string:
		return []byte(quote(x)), nil
	case rawJSON:
		return []byte(x), nil
	}
	return json.Marshal(v)
}

func (j *journal) ack(op string, i int, more ...field) error {
	return j.record(append([]field{{"kind", "ack"}, {"op", op}, {"i", i}}, more...)...)
}

func (j *journal) close() { syscall.Close(j.fd) }

// send appends one delivery line to the transport with one write(2).
func send(path, key, payload string) error {
	line := fmt.Sprintf("{\"key\":%s,\"payload\":%s}\n", quote(key), quote(payload))
	fd, err := openAppend(path)
	if err != nil {
		return fmt.Errorf("sending %s: %w", key, err)
	}
	defer syscall.Close(fd)
	if err := writeLine(fd, []byte(line)); err != nil {
		return fmt.Errorf("sending %s: %w", key, err)
	}
	return nil
}

// arrived is the keys the provider accepted: every complete line of the
// transport (a final line without its newline is a send the kill cut).
func arrived(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the transport: %w", err)
	}
	keys := map[string]bool{}
	complete := data[:bytes.LastIndexByte(data, '\n')+1]
	for _, line := range bytes.Split(complete, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var d struct{ Key string }
		if err := json.Unmarshal(line, &d); err != nil || d.Key == "" {
			return nil, fmt.Errorf("the transport has a line that is not a delivery: %q", line)
		}
		keys[d.Key] = true
	}
	return keys, nil
}
