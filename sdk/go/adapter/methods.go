package adapter

// The store's method set, checked before anything runs (sdk/API.md: any
// other public method name is an error). In Go a misspelt method does not
// fail to compile: the store merely stops implementing an interface, and
// its operation would silently be skipped as not implemented. So an
// exported method that is not in the API, or one of the API's names with
// another signature, is named here, with the name it is closest to.

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// apiMethods are the methods of the API, each with the interface that holds it.
var apiMethods = map[string]reflect.Type{
	"Open":          reflect.TypeOf((*Store)(nil)).Elem(),
	"Journal":       reflect.TypeOf((*Store)(nil)).Elem(),
	"Append":        reflect.TypeOf((*Store)(nil)).Elem(),
	"State":         reflect.TypeOf((*Store)(nil)).Elem(),
	"Close":         reflect.TypeOf((*closer)(nil)).Elem(),
	"CreateSession": reflect.TypeOf((*SessionCreator)(nil)).Elem(),
	"Rotate":        reflect.TypeOf((*Rotator)(nil)).Elem(),
	"Park":          reflect.TypeOf((*Handoff)(nil)).Elem(),
	"Claim":         reflect.TypeOf((*Handoff)(nil)).Elem(),
	"Rewind":        reflect.TypeOf((*Forker)(nil)).Elem(),
	"LiveLength":    reflect.TypeOf((*LiveLengther)(nil)).Elem(),
	"Record":        reflect.TypeOf((*Outbox)(nil)).Elem(),
	"Attempting":    reflect.TypeOf((*Outbox)(nil)).Elem(),
	"Delivered":     reflect.TypeOf((*Outbox)(nil)).Elem(),
	"Pending":       reflect.TypeOf((*Outbox)(nil)).Elem(),
	"Mutants":       reflect.TypeOf((*Mutator)(nil)).Elem(),
	"Preload":       reflect.TypeOf((*Preloader)(nil)).Elem(),
	// Base's, promoted into a store that embeds it.
	"Op":     nil,
	"Mutant": nil,
	"Writer": nil,
	"Index":  nil,
	"AckNow": nil,
}

type closer interface{ Close() error }

func checkMethods(s Store) error {
	t := reflect.TypeOf(s)
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		iface, known := apiMethods[m.Name]
		if !known {
			return ruleError{m.Name, fmt.Sprintf("no such method in the adapter API%s (rule: sdk/API.md; unexport a helper)", didYouMean(m.Name))}
		}
		if iface == nil {
			continue
		}
		want, _ := iface.MethodByName(m.Name)
		if !sameSignature(m.Type, want.Type) {
			got := strings.Replace(m.Type.String(), "func("+t.String()+", ", "func(", 1)
			return ruleError{m.Name, fmt.Sprintf("its signature %s is not adapter.%s's %s (rule: sdk/API.md)", got, iface.Name(), want.Type)}
		}
		if !t.Implements(iface) {
			return ruleError{m.Name, fmt.Sprintf("adapter.%s needs all of %s (rule: sdk/API.md)", iface.Name(), methodNames(iface))}
		}
	}
	return nil
}

// sameSignature: method (receiver first) takes and returns what the
// interface's method does.
func sameSignature(method, want reflect.Type) bool {
	if method.NumIn()-1 != want.NumIn() || method.NumOut() != want.NumOut() || method.IsVariadic() != want.IsVariadic() {
		return false
	}
	for i := 0; i < want.NumIn(); i++ {
		if method.In(i+1) != want.In(i) {
			return false
		}
	}
	for i := 0; i < want.NumOut(); i++ {
		if method.Out(i) != want.Out(i) {
			return false
		}
	}
	return true
}

func methodNames(iface reflect.Type) string {
	names := make([]string, iface.NumMethod())
	for i := range names {
		names[i] = iface.Method(i).Name
	}
	return strings.Join(names, ", ")
}

// didYouMean names the API method closest to name, when one is close.
func didYouMean(name string) string {
	names := make([]string, 0, len(apiMethods))
	for n := range apiMethods {
		names = append(names, n)
	}
	sort.Strings(names)
	best, dist := "", 3
	for _, n := range names {
		if d := distance(strings.ToLower(name), strings.ToLower(n)); d < dist {
			best, dist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min3(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func min3(a, b, c int) int {
	if b < a {
		a = b
	}
	if c < a {
		a = c
	}
	return a
}
