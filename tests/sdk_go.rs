//! The Go adapter library's own tests (`sdk/go`, `go test ./...`): its
//! rules unit by unit, the protocol corpus (protocol/corpus/*.json) case by
//! case, and its operations run around small stores. Offline: the library
//! has no dependency to fetch. Where Go is missing, a skip by the suite's
//! policy (a failure under CI).

use crashcells::testskip::{Need, skip_or_fail};
use std::process::Command;

const SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sdk/go");

#[test]
fn the_go_library_passes_its_own_tests() {
    if !Command::new("go").arg("version").output().is_ok_and(|o| o.status.success()) {
        return skip_or_fail(Need::Go, "`go version` did not run");
    }
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new("go")
        .args(["test", "-count=1", "./..."])
        .current_dir(SDK)
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("TMPDIR", scratch.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "go test failed:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("ok  \tcrashcells/sdk/go/adapter"), "{text}");
}
