//! The one error type of the engine.
//!
//! Operating errors (I/O failures, corruption, bad arguments, a poisoned database) are values of
//! [`Error`]; programmer errors (broken internal invariants) are assertions. Every variant says
//! where the problem is: the operation and path for I/O, the file or region and the reason for
//! corruption.

use std::path::PathBuf;

/// The result type of every fallible engine operation.
pub type Result<T> = std::result::Result<T, Error>;

/// An operating error of the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system operation failed.
    #[error("I/O error during {op} on {path}: {source}")]
    Io {
        /// The operation that failed (`"append"`, `"sync"`, `"open"`, ...).
        op: &'static str,
        /// The file or directory it was applied to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Stored data failed a checksum or a structural check.
    #[error("corruption in {location}: {reason}")]
    Corruption {
        /// The damaged file (and offset or block where known) or PM region.
        location: String,
        /// What check failed.
        reason: String,
    },
    /// The caller passed an argument the engine does not accept (oversized key, bad option, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An earlier write or sync of the log or manifest failed; the database refuses further writes
    /// because its durable state is unknown. Reopen the database to recover.
    #[error("database is read-only after an earlier failure: {0}")]
    Poisoned(String),
    /// The database was opened read-only ([`crate::Options::read_only`]) and the call would
    /// change it.
    #[error("database is open read-only: {0}")]
    ReadOnly(String),
    /// A tier is out of space (e.g. no free chunk in the PM pool).
    #[error("out of space: {0}")]
    NoSpace(String),
    /// The requested object does not exist (e.g. opening a database that was never created with
    /// `create_if_missing = false`).
    #[error("not found: {0}")]
    NotFound(String),
}

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::Corruption`].
    pub fn corruption(location: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Corruption {
            location: location.into(),
            reason: reason.into(),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// A copy of this error for reporting to a second caller (I/O sources are not `Clone`).
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Io { op, path, source } => Error::Io {
                op,
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption { location, reason } => Error::Corruption {
                location: location.clone(),
                reason: reason.clone(),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::Poisoned(m) => Error::Poisoned(m.clone()),
            Error::NotFound(m) => Error::NotFound(m.clone()),
            Error::NoSpace(m) => Error::NoSpace(m.clone()),
            Error::ReadOnly(m) => Error::ReadOnly(m.clone()),
        }
    }
}

impl From<tierkv_pm::PmError> for Error {
    fn from(e: tierkv_pm::PmError) -> Self {
        use tierkv_pm::PmError;
        match e {
            PmError::Io { op, path, source } => Error::Io {
                op,
                path: path.into(),
                source,
            },
            PmError::Corruption { location, reason } => Error::Corruption { location, reason },
            PmError::InvalidArgument(m) => Error::InvalidArgument(m),
            PmError::NoSpace(m) => Error::NoSpace(m),
        }
    }
}
