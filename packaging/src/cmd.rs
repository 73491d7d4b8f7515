//! Running external programs with errors that say what was run and what it printed.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{bail, Context, Result};

/// A `cargo` command: the cargo that runs xtask (`$CARGO`), so that the pinned toolchain builds
/// what xtask builds.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Whether the environment variable `variable` picks the part named `name` of a command (a
/// suite's step, a benchmark's workload): unset or empty picks every part; otherwise
/// `<text>[|<text>...]` picks the parts whose names hold one of the texts.
pub fn picked_by(variable: &str, name: &str) -> bool {
    match std::env::var(variable).ok().filter(|texts| !texts.is_empty()) {
        Some(texts) => texts.split('|').any(|text| name.contains(text)),
        None => true,
    }
}

/// Runs `cmd` to completion, capturing its output; fails unless it exits 0.
pub fn output(cmd: &mut Command) -> Result<Output> {
    let line = describe(cmd);
    let out = cmd.output().with_context(|| format!("cannot start `{line}`"))?;
    if !out.status.success() {
        bail!(
            "`{line}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out)
}

/// Runs `cmd` and returns its standard output as text.
pub fn stdout(cmd: &mut Command) -> Result<String> {
    Ok(String::from_utf8_lossy(&output(cmd)?.stdout).into_owned())
}

/// Runs `cmd` with its output going to the terminal; fails unless it exits 0.
pub fn status(cmd: &mut Command) -> Result<()> {
    let line = describe(cmd);
    let status = cmd.status().with_context(|| format!("cannot start `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed ({status})");
    }
    Ok(())
}

/// Shell-like rendering of a command for messages.
pub fn describe(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Reads a whole file, naming it in the error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// `f` of each item, on as many threads as the machine has cores (at most `items.len()`), in
/// the items' order: for independent compiles, each a single-threaded program (clang, ptxas),
/// which a 2-core machine otherwise runs one at a time.
pub fn in_parallel<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                let Some((at, item)) = next else { break };
                let result = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner()).push((at, result));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(at, _)| *at);
    results.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn in_parallel_keeps_the_items_order() {
        let squares = super::in_parallel((0..50u64).collect(), |n| {
            std::thread::sleep(std::time::Duration::from_micros(50 - n));
            n * n
        });
        assert_eq!(squares, (0..50u64).map(|n| n * n).collect::<Vec<_>>());
        assert!(super::in_parallel(Vec::<u8>::new(), |n| n).is_empty());
    }
}
