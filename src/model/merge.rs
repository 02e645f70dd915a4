//! Merging the reports of one run's partitions (`run --partition k/n`, one
//! per CI runner) into the report of the whole run, as if one machine had
//! run it: the results in plan order, the summary recomputed, the links
//! between timed fires and syscall repros made again.
//!
//! The known findings of the shares (`run --known` in each) are judged
//! again against the whole run: a finding one share did not see fire may
//! have fired in another.
//!
//! Reports merge only if they are of one run: the same command (every
//! option that can change a verdict), seed, matrix, plan size, crashcells
//! and SQLite versions and store, and together exactly the partitions
//! 1..n of one n. Anything else is a one-line error naming the file.

use serde::{Deserialize, Serialize};

use super::Report;
use crate::error::{Error, Result};

/// `--partition k/n`: the kth of n contiguous, disjoint shares of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub k: usize,
    pub n: usize,
}

impl Partition {
    /// The indices of a plan of `total` results in this share: contiguous,
    /// so that merged shares keep the plan's order, and sizes differ by at
    /// most one.
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        (total * (self.k - 1) / self.n)..(total * self.k / self.n)
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// The most shares a plan is cut into: more than any CI matrix runs, and
/// few enough that [`Partition::range`]'s products fit.
pub const MOST_SHARES: usize = 10_000;

impl std::str::FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Partition, String> {
        let bad = || format!("`{s}` is not k/n with 1 <= k <= n <= {MOST_SHARES} (e.g. 1/4)");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (k, n): (usize, usize) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if k == 0 || k > n || n > MOST_SHARES { Err(bad()) } else { Ok(Partition { k, n }) }
    }
}

/// Reads the reports `from` and merges them. A share that is missing (its
/// runner died before it wrote it) is named in the one error the merge
/// makes, `N-1 of N partitions given`, rather than as a file error first.
pub fn merge_files(from: &[std::path::PathBuf]) -> Result<Report> {
    let (mut reports, mut missing) = (Vec::new(), Vec::new());
    for path in from {
        let file = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => reports.push((file.clone(), Report::from_json(&file, &text)?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing.push(file),
            Err(e) => return Err(Error::io("report", path)(e)),
        }
    }
    let n = reports.iter().find_map(|(_, r)| r.partition.map(|p| p.n));
    match (missing.first(), n) {
        (None, _) => merge(reports),
        (Some(first), None) => Err(Error::Report { file: first.clone(), message: "not found".into() }),
        (Some(_), Some(n)) => Err(Error::Usage(format!(
            "{} of {n} partitions given: {} not found; every partition is needed (rerun that share with the same seed)",
            reports.len(),
            missing.join(", ")
        ))),
    }
}

/// Merges `reports` (each with the file it came from). One report is
/// returned as it is.
pub fn merge(mut reports: Vec<(String, Report)>) -> Result<Report> {
    if reports.len() == 1 {
        return Ok(reports.remove(0).1);
    }
    let (first_file, first) = &reports[0];
    for (file, r) in &reports[1..] {
        same_run(first_file, first, file, r)?;
    }
    reports.sort_by_key(|(_, r)| r.partition.map_or(0, |p| p.k));
    complete(&reports)?;
    Ok(combine(reports.into_iter().map(|(_, r)| r).collect()))
}

/// Whether `b` (from `file`) is of the same run as `a` (from `a_file`).
fn same_run(a_file: &str, a: &Report, file: &str, b: &Report) -> Result<()> {
    let fields: [(&str, String, String); 7] = [
        ("seed", a.seed.to_string(), b.seed.to_string()),
        ("matrix", a.matrix.clone(), b.matrix.clone()),
        ("command", a.command.clone(), b.command.clone()),
        ("planned results", format!("{:?}", a.planned), format!("{:?}", b.planned)),
        ("crashcells version", a.crashcells_version.clone(), b.crashcells_version.clone()),
        ("SQLite version", a.sqlite_version.clone(), b.sqlite_version.clone()),
        ("store", a.child.clone(), b.child.clone()),
    ];
    for (what, x, y) in fields {
        if x != y {
            let message = format!("not a partition of the same run as {a_file}: {what} `{y}` differs from `{x}`");
            return Err(Error::Report { file: file.to_string(), message });
        }
    }
    Ok(())
}

/// Every partition 1..n of one n, each once.
fn complete(reports: &[(String, Report)]) -> Result<()> {
    let n = reports[0].1.partition.map(|p| p.n);
    for (i, (file, r)) in reports.iter().enumerate() {
        let Some(p) = r.partition else {
            let message = "not a partition (run without --partition): it is a whole run already".to_string();
            return Err(Error::Report { file: file.clone(), message });
        };
        if Some(p.n) != n {
            let message = format!("partition {p} is not one of {} shares", n.unwrap_or(0));
            return Err(Error::Report { file: file.clone(), message });
        }
        if p.k != i + 1 {
            let have: Vec<String> = reports.iter().filter_map(|(_, r)| r.partition.map(|p| p.to_string())).collect();
            let problem = if p.k == i { "twice" } else { "without the ones before it" };
            let message = format!("partition {p} comes {problem} (given: {})", have.join(", "));
            return Err(Error::Report { file: file.clone(), message });
        }
    }
    if reports.len() != n.unwrap_or(0) {
        let message = format!("{} of {} partitions given: every partition is needed", reports.len(), n.unwrap_or(0));
        return Err(Error::Report { file: reports[reports.len() - 1].0.clone(), message });
    }
    Ok(())
}

/// The whole run from its partitions, in order.
fn combine(parts: Vec<Report>) -> Report {
    let mut whole = parts[0].clone();
    whole.results = parts.iter().flat_map(|p| p.results.iter().cloned()).collect();
    whole.partition = None;
    // The partitions ran side by side: the run took as long as the slowest.
    whole.duration_ms = parts.iter().map(|p| p.duration_ms).max().unwrap_or(0);
    whole.interrupted = parts.iter().any(|p| p.interrupted);
    whole.signal = parts.iter().find_map(|p| p.signal);
    whole.run_id = joined(parts.iter().map(|p| p.run_id.as_str()));
    whole.workdir = joined(parts.iter().map(|p| p.workdir.as_str()));
    whole.os = joined(parts.iter().map(|p| p.os.as_str()));
    whole.start_folder = joined(parts.iter().map(|p| p.start_folder.as_str()));
    let launchers = joined(parts.iter().filter_map(|p| p.launcher.as_deref()));
    whole.launcher = (!launchers.is_empty()).then_some(launchers);
    let containments = joined(parts.iter().filter_map(|p| p.containment.as_deref()));
    whole.containment = (!containments.is_empty()).then_some(containments);
    whole.escaped = parts.iter().flat_map(|p| p.escaped.iter().cloned()).collect();
    whole.outside = parts.iter().flat_map(|p| p.outside.iter().cloned()).collect();
    let (file, findings) = known_of(&parts);
    whole.judge_known(file, findings);
    whole.recount();
    whole.annotate();
    whole
}

/// The known findings the shares were judged against (each file's entries
/// once, in order: shares normally share one file), and the files.
fn known_of(parts: &[Report]) -> (Option<String>, Vec<super::KnownFinding>) {
    let mut findings: Vec<super::KnownFinding> = Vec::new();
    for k in parts.iter().flat_map(|p| &p.known_findings) {
        if !findings.iter().any(|f| f.fingerprint == k.finding.fingerprint) {
            findings.push(k.finding.clone());
        }
    }
    let files = joined(parts.iter().filter_map(|p| p.known_file.as_deref()));
    ((!files.is_empty()).then_some(files), findings)
}

/// The distinct values, in order, joined with `, `.
fn joined<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for v in values.filter(|v| !v.is_empty()) {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SCHEMA, Summary};

    fn part(k: usize, n: usize) -> Report {
        Report {
            schema: SCHEMA.into(),
            crashcells_version: "0.1.0".into(),
            sqlite_version: "3.54.1".into(),
            seed: 7,
            matrix: "default".into(),
            duration_ms: 100 * k as u64,
            run_id: format!("r{k}"),
            workdir: "/w".into(),
            child: "reference".into(),
            interrupted: false,
            signal: None,
            command: "crashcells run --seed 7".into(),
            planned: Some(9),
            partition: Some(Partition { k, n }),
            os: "linux".into(),
            ci: None,
            start_folder: String::new(),
            launcher: None,
            containment: None,
            escaped: vec![],
            outside: vec![],
            known_file: None,
            known_findings: vec![],
            new_only: false,
            results: vec![],
            summary: Summary::default(),
        }
    }

    fn named(parts: Vec<Report>) -> Vec<(String, Report)> {
        parts.into_iter().enumerate().map(|(i, r)| (format!("p{}.json", i + 1), r)).collect()
    }

    #[test]
    fn partitions_merge_in_order_whatever_order_they_are_given_in() {
        let whole = merge(named(vec![part(2, 2), part(1, 2)])).unwrap();
        assert_eq!((whole.partition, whole.duration_ms), (None, 200));
        assert_eq!((whole.run_id.as_str(), whole.workdir.as_str()), ("r1, r2", "/w"));
    }

    #[test]
    fn reports_of_other_runs_or_missing_partitions_are_refused_in_one_line() {
        let mut other = part(2, 2);
        other.seed = 8;
        let e = merge(named(vec![part(1, 2), other])).unwrap_err().to_string();
        assert_eq!(e, "report p2.json: not a partition of the same run as p1.json: seed `8` differs from `7`");
        let e = merge(named(vec![part(1, 3), part(3, 3)])).unwrap_err().to_string();
        assert!(e.contains("partition 3/3 comes without the ones before it"), "{e}");
        let e = merge(named(vec![part(1, 2), part(1, 2)])).unwrap_err().to_string();
        assert!(e.contains("partition 1/2 comes twice"), "{e}");
        let e = merge(named(vec![part(1, 3), part(2, 3)])).unwrap_err().to_string();
        assert!(e.contains("2 of 3 partitions given"), "{e}");
        let mut whole = part(1, 2);
        whole.partition = None;
        let e = merge(named(vec![part(1, 2), whole])).unwrap_err().to_string();
        assert!(e.contains("not a partition"), "{e}");
    }

    /// A share whose file is missing is named once, in the count the
    /// docs promise, whichever share it is.
    #[test]
    fn a_missing_share_is_named_in_the_count_of_partitions_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = |k: usize| dir.path().join(format!("part-{k}.json"));
        for k in [1, 3] {
            std::fs::write(path(k), serde_json::to_string(&part(k, 3)).unwrap()).unwrap();
        }
        let e = merge_files(&[path(1), path(2), path(3)]).unwrap_err().to_string();
        let expected = format!("2 of 3 partitions given: {} not found; every partition", path(2).display());
        assert!(e.starts_with(&expected), "{e}");
        let e = merge_files(&[path(2)]).unwrap_err().to_string();
        assert_eq!(e, format!("report {}: not found", path(2).display()));
    }

    /// A finding one share did not run (and noted so) fired in another:
    /// the merged run says it fired, and its exit code follows.
    #[test]
    fn known_findings_are_judged_again_against_the_whole_run() {
        use crate::model::{ExitCode, Fingerprint, KnownFinding, KnownStatus, Verdict};
        use crate::plan::KillMode;
        let mut fired = crate::model::tests::fire(KillMode::Syscall, "wal");
        fired.finding.violation = Some("orphan".into());
        fired.finding.fingerprint = Fingerprint::of(&fired).map(|f| f.to_string());
        let finding =
            KnownFinding { fingerprint: fired.finding.fingerprint.clone().unwrap(), issue: "#31".into(), note: None };
        let (mut one, mut two) = (part(1, 2), part(2, 2));
        two.results = vec![fired];
        for p in [&mut one, &mut two] {
            p.judge_known(Some("known.toml".into()), vec![finding.clone()]);
        }
        assert_eq!(one.known_findings[0].status, KnownStatus::NotRun);
        let whole = merge(named(vec![one, two])).unwrap();
        assert_eq!(whole.known_findings[0].status, KnownStatus::Fired);
        assert_eq!((whole.results[0].verdict, whole.exit_code()), (Verdict::Known, ExitCode::Pass));
        assert_eq!(whole.known_file.as_deref(), Some("known.toml"));
    }

    #[test]
    fn shares_are_contiguous_disjoint_and_cover_the_plan() {
        for total in 0..20 {
            for n in 1..6 {
                let ranges: Vec<_> = (1..=n).map(|k| Partition { k, n }.range(total)).collect();
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[n - 1].end, total);
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
                assert!(ranges.iter().all(|r| r.len() <= total.div_ceil(n)));
            }
        }
        assert!("0/2".parse::<Partition>().is_err() && "3/2".parse::<Partition>().is_err());
        assert_eq!("2/3".parse::<Partition>(), Ok(Partition { k: 2, n: 3 }));
    }
}
