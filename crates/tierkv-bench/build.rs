//! Records the git revision the harness was built from (`TIERKV_GIT_REVISION`), "unknown" when
//! git or the repository is not available.

use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TIERKV_GIT_REVISION={rev}");
    // Rebuild when HEAD moves: HEAD and its reflog live in the (work tree's) git directory.
    if let Some(git_dir) = Command::new("git")
        .args(["rev-parse", "--absolute-git-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
    {
        let git_dir = std::path::Path::new(git_dir.trim());
        for file in ["HEAD", "logs/HEAD"] {
            let path = git_dir.join(file);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
