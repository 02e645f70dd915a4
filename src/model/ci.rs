//! The CI run a report came from: the commit it tested and a link to the
//! run's page, read from the variables GitHub Actions sets in every step.
//!
//! They are recorded into the report when `run` builds it, not read when a
//! report is rendered, so that `report --from` renders the same Markdown on
//! any machine, and a merge job renders its shares' commit and run even
//! when it runs in another workflow.

use serde::{Deserialize, Serialize};

/// What a reader of a tracking issue needs to find the run a report is of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiRun {
    /// The commit the run tested (`GITHUB_SHA`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    /// `owner/name` (`GITHUB_REPOSITORY`), for a link to the commit.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository: String,
    /// The run's page: `GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_url: String,
}

/// The variables [`CiRun::from_vars`] reads; tests clear them so that a
/// test run inside CI renders as one outside it.
pub const VARIABLES: [&str; 4] = ["GITHUB_SHA", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"];

impl CiRun {
    /// The CI run this process is part of, from its environment; `None`
    /// outside CI.
    pub fn from_env() -> Option<CiRun> {
        CiRun::from_vars(|name| std::env::var(name).ok())
    }

    /// The CI run that `var` describes. The link needs its three parts; the
    /// commit stands alone (a plain shell CI may export only `GITHUB_SHA`).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<CiRun> {
        let get = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let repository = get("GITHUB_REPOSITORY").unwrap_or_default();
        let run_url = match (get("GITHUB_SERVER_URL"), get("GITHUB_RUN_ID")) {
            (Some(server), Some(id)) if !repository.is_empty() => {
                format!("{}/{repository}/actions/runs/{id}", server.trim_end_matches('/'))
            }
            _ => String::new(),
        };
        let run = CiRun { commit: get("GITHUB_SHA").unwrap_or_default(), repository, run_url };
        (!run.commit.is_empty() || !run.run_url.is_empty()).then_some(run)
    }

    /// The commit's page, when the run's server and repository are known.
    pub fn commit_url(&self) -> Option<String> {
        let (server, _) = self.run_url.split_once(&format!("/{}/actions/runs/", self.repository))?;
        (!self.commit.is_empty()).then(|| format!("{server}/{}/commit/{}", self.repository, self.commit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_run_link_needs_its_three_parts_and_the_commit_stands_alone() {
        let all = vars(&[
            ("GITHUB_SHA", "0123abc"),
            ("GITHUB_SERVER_URL", "https://github.example/"),
            ("GITHUB_REPOSITORY", "team/store"),
            ("GITHUB_RUN_ID", "42"),
        ]);
        let run = CiRun::from_vars(all).unwrap();
        assert_eq!(run.run_url, "https://github.example/team/store/actions/runs/42");
        assert_eq!(run.commit_url().unwrap(), "https://github.example/team/store/commit/0123abc");
        let sha_only = CiRun::from_vars(vars(&[("GITHUB_SHA", "0123abc"), ("GITHUB_RUN_ID", "42")])).unwrap();
        assert_eq!((sha_only.run_url.as_str(), sha_only.commit_url()), ("", None));
        assert_eq!(CiRun::from_vars(vars(&[("GITHUB_SHA", " ")])), None, "outside CI: nothing");
    }
}
