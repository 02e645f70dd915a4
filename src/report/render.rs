//! Which renderer a format is: the one place that dispatches a report to
//! the four renderers, so that the model (`mod.rs`) imports none of them.

use super::{human, junit, markdown};
use crate::error::Result;
use crate::model::Report;

/// The output formats of `run` and `report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Junit,
    Markdown,
}

impl Format {
    /// Every format, in the order `--format` lists them: derived from the
    /// enum, so that a test that loops over formats cannot miss a new one.
    pub fn all() -> &'static [Format] {
        <Format as clap::ValueEnum>::value_variants()
    }

    /// The name `--format` takes.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self).map(|v| v.get_name().to_string()).unwrap_or_default()
    }
}

/// Renders `report` in `format`.
pub fn render(report: &Report, format: Format, color: bool) -> Result<String> {
    match format {
        Format::Human => Ok(human::render(report, color)),
        Format::Json => Ok(report.to_json()),
        Format::Junit => junit::render(report),
        Format::Markdown => Ok(markdown::render(report)),
    }
}
