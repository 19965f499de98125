//! The storage tiers a design places data on.

use serde::{Deserialize, Serialize};

/// A storage tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Tier {
    /// Block storage through the file-system seam.
    Ssd,
    /// Persistent memory through the PM pool.
    Pm,
}

impl Tier {
    /// The tier's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Ssd => "ssd",
            Tier::Pm => "pm",
        }
    }
}
