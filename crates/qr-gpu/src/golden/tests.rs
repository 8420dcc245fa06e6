//! The golden checks (they run with every `cargo test`, the PTX one with
//! NVRTC) and the rewrites (ignored: run on purpose).

use std::collections::BTreeSet;

use super::diff::{changed_words, diff};
use super::manifest::{Module, Op, golden_devices, golden_shapes, manifest};
use super::ptx::ptx_manifest;
use super::{PLANS, PTX, REWRITE_PLANS, REWRITE_PTX, check, data, write};

/// The default plans are the manifest's (`golden`'s docs): the proof, without
/// a device or NVRTC, that a restructure changed no plan and no module.
#[test]
fn golden_default_plans_match() {
    check(PLANS, &manifest().text, REWRITE_PLANS);
}

/// Rewrites `tests/data/default_plans.txt` from the code as it is (for a
/// change of a default, committed with it).
#[test]
#[ignore = "rewrites tests/data/default_plans.txt: cargo test -p qr-gpu --lib golden_write -- --ignored"]
fn golden_write_default_plans() {
    let m = manifest();
    write(PLANS, &m.text);
    println!("{} entries, {} modules", m.entries, m.modules.len());
}

/// The manifest sees what it should: every device, operation and shape,
/// each plan's modules in the table, and the modules that differ between
/// devices (row splits only where there are clusters).
#[test]
fn golden_manifest_covers_every_entry() {
    let m = manifest();
    let (devices, shapes) = (golden_devices(), golden_shapes());
    assert_eq!(m.entries, devices.len() * shapes.len() * Op::ALL.len());
    for s in [(1, 4096), (2, 4096), (8, 2048), (60, 1024), (640, 512)] {
        assert!(shapes.contains(&s), "{s:?}");
    }
    assert!(m.text.contains("[H100 SXM 80GB | geqrf | 640x512x512]"));
    assert!(m.text.contains("[H200 | ormqr k=n | 20x32x32]"));
    assert!(!m.text.contains("refused"), "a default plan was refused");
    for line in m.text.lines().filter(|l| l.starts_with("modules: ")) {
        for name in line["modules: ".len()..].split(' ') {
            assert!(m.modules.contains_key(name), "{name}");
        }
    }
    let families: BTreeSet<&str> = m.modules.values().map(|(x, _)| x.src.family).collect();
    assert_eq!(
        families,
        ["panel", "panelreg", "q", "smem", "trailing_tc", "util"].into()
    );
    // Row splits only on devices with clusters, and there.
    let splits = |m: &Module| {
        m.defines
            .iter()
            .any(|(k, v)| k == "TC_ROWSPLIT" && v != "1")
    };
    let split_archs: BTreeSet<(i32, i32)> = m
        .modules
        .values()
        .filter(|(x, _)| splits(x))
        .flat_map(|(_, a)| a.iter().copied())
        .collect();
    assert_eq!(split_archs, [(9, 0), (10, 0), (12, 0)].into());
    // The diff names the changed block and line.
    let old = "# h\n\n[a]\nx: 1\ny: 2\n\n[b]\nz\n";
    let new = "# h\n\n[a]\nx: 1\ny: 3\n\n[c]\nz\n";
    let d = diff(old, new, 80);
    assert!(d.starts_with("3 block(s) differ"), "{d}");
    assert!(d.contains("-   y: 2") && d.contains("+   y: 3"), "{d}");
    let (g, c) = changed_words("p: a=1 b=2 c=3 d=4", "p: a=1 b=5 c=3 d=4");
    assert_eq!(
        (g.as_str(), c.as_str()),
        ("p: ... b=2 ...", "p: ... b=5 ...")
    );
    assert!(d.contains("- [b] (block gone)") && d.contains("+ [c] (block new)"));
}

/// The default plans' modules compile to the PTX the file records: the
/// proof that a restructure left the compiled code byte for byte the same
/// (only under the NVRTC that wrote the file: the PTX names its compiler).
#[test]
#[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu --lib -- --ignored nvrtc_golden_ptx"]
fn nvrtc_golden_ptx_digests() {
    let path = data(PTX);
    let old = std::fs::read_to_string(&path).ok();
    let lines: Option<BTreeSet<String>> =
        old.as_ref().map(|t| t.lines().map(str::to_owned).collect());
    let now = ptx_manifest(lines.as_ref());
    if let Some(old) = old {
        let version = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("nvrtc "))
                .map(str::to_owned)
        };
        assert_eq!(
            version(&old),
            version(&now),
            "{} was written by another NVRTC: its digests compare only under the same one \
             (rewrite it from the code before the change with {REWRITE_PTX}, then compare)",
            path.display()
        );
    }
    check(PTX, &now, REWRITE_PTX);
}

/// Rewrites `tests/data/default_ptx.txt` (for a change of a default or of
/// a kernel source, committed with it).
#[test]
#[ignore = "needs libnvrtc; rewrites tests/data/default_ptx.txt: cargo test -p qr-gpu --lib write_golden_ptx -- --ignored"]
fn write_golden_ptx() {
    write(PTX, &ptx_manifest(None));
}
