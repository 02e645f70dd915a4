//! The harness's own errors: bad input, or a step the harness could not take.
//! A violated clause is never one of these; it is a result with verdict `fire`.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("catalog {file}: {message}")]
    Catalog { file: String, message: String },
    #[error("matrix {file}: {message}")]
    Matrix { file: String, message: String },
    #[error("{0}")]
    Usage(String),
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The child given by `--child` (or the reference child) does not speak
    /// the protocol: see docs/PROTOCOL.md.
    #[error("child `{child}`: {message} (see docs/PROTOCOL.md)")]
    Child { child: String, message: String },
    #[error("report {file}: {message}")]
    Report { file: String, message: String },
    /// A known-findings file (`--known`) that cannot be read as one.
    #[error("known findings {file}: {message}")]
    Known { file: String, message: String },
    /// `crashcells audit` could not audit a leg at all (honored or not is data).
    #[error("audit leg `{leg}`: {message}")]
    Audit { leg: String, message: String },
}

impl Error {
    /// Wraps an I/O error with the thing and the path it concerns.
    pub fn io(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { what, path, source }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A TOML error as one line: the message and where it is.
pub fn toml_message(e: &toml::de::Error) -> String {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(span) => format!("{message} (at byte {})", span.start),
        None => message,
    }
}
