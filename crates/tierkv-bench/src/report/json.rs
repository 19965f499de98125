//! The JSON report (`--json`; `docs/REPORT_SCHEMA.md`) and what it records about the machine
//! and the build.

use super::*;

/// The machine a run was measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Logical CPUs available.
    pub cores: usize,
    /// Total memory in bytes (`/proc/meminfo`), 0 when unknown.
    pub memory_bytes: u64,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// Operating system and architecture.
    pub os: String,
}

impl MachineInfo {
    /// Describes this machine (fields that cannot be read are "unknown" / 0).
    pub fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| {
                l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model")
            })
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
        MachineInfo {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel: if kernel.is_empty() {
                "unknown".into()
            } else {
                kernel
            },
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// The git revision of the harness: recorded at build time by build.rs, else asked of git at
/// run time, else "unknown".
pub fn git_revision() -> String {
    let built = env!("TIERKV_GIT_REVISION");
    if built != "unknown" {
        return built.to_string();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The `--json` document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JsonReport {
    /// `"tierkv-bench"`.
    pub tool: String,
    /// The harness version.
    pub version: String,
    /// The git revision the harness was built from.
    pub git_revision: String,
    /// When the report was assembled (UTC, RFC 3339 to the second). Absent from reports
    /// written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// The machine.
    pub machine: MachineInfo,
    /// The flags of the run.
    pub flags: BenchConfig,
    /// One entry per design, in `--design` order.
    pub runs: Vec<DesignRun>,
    /// The designs side by side (ratios to the first design).
    pub comparison: Vec<ComparisonRow>,
    /// For `tierkv reproduce`: the experiment, its rounds and phases, and every check with
    /// its verdict. Absent from `tierkv bench` reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<crate::reproduce::ReproduceSummary>,
}

impl JsonReport {
    /// Assembles a report.
    pub fn new(flags: &BenchConfig, runs: Vec<DesignRun>) -> Self {
        JsonReport {
            tool: "tierkv-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_revision: git_revision(),
            written: Some(
                humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            ),
            machine: MachineInfo::detect(),
            flags: flags.clone(),
            comparison: compare(&runs),
            runs,
            reproduce: None,
        }
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// Writes the report to `path`.
    pub fn write_to(&self, path: &Path) -> Result<(), String> {
        let json = self
            .to_json()
            .map_err(|e| format!("encoding the JSON report: {e}"))?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("writing the JSON report to {}: {e}", path.display()))
    }
}
