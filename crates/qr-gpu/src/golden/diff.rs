//! How a manifest differs from its file, block by block, for a failing
//! check to show.

use std::collections::BTreeMap;

/// Blocks of a manifest: runs of lines between blank lines, keyed by their
/// first line.
fn blocks(text: &str) -> Vec<(&str, Vec<&str>)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            let mut lines = b.lines();
            (lines.next().unwrap_or(""), lines.collect())
        })
        .collect()
}

/// What differs between the file's text `old` and the regenerated `new`,
/// block by block (at most `max` lines): blocks gone, blocks new, and per
/// changed block the lines only in the file (`-`) and only now (`+`),
/// the module table's first.
pub(super) fn diff(old: &str, new: &str, max: usize) -> String {
    let (a, b) = (blocks(old), blocks(new));
    let in_a: BTreeMap<&str, &Vec<&str>> = a.iter().map(|(k, v)| (*k, v)).collect();
    let in_b: BTreeMap<&str, &Vec<&str>> = b.iter().map(|(k, v)| (*k, v)).collect();
    let mut out = Vec::new();
    let mut changed = 0;
    // The module table first: a changed define shows there as itself.
    let table = |(k, _): &&(&str, Vec<&str>)| k.starts_with("[modules");
    let first = a.iter().filter(table);
    for (k, v) in first.chain(a.iter().filter(|b| !table(b))) {
        match in_b.get(k) {
            None => {
                changed += 1;
                out.push(format!("- {k} (block gone)"));
            }
            Some(w) if *w != v => {
                changed += 1;
                out.push(format!("  {k}"));
                let gone: Vec<&str> = v.iter().filter(|l| !w.contains(l)).copied().collect();
                let came: Vec<&str> = w.iter().filter(|l| !v.contains(l)).copied().collect();
                if gone.len() == came.len() {
                    for (g, c) in gone.iter().zip(&came) {
                        let (g, c) = changed_words(g, c);
                        out.push(format!("-   {g}"));
                        out.push(format!("+   {c}"));
                    }
                } else {
                    out.extend(gone.iter().map(|l| format!("-   {l}")));
                    out.extend(came.iter().map(|l| format!("+   {l}")));
                }
            }
            Some(_) => {}
        }
    }
    for (k, _) in &b {
        if !in_a.contains_key(k) {
            changed += 1;
            out.push(format!("+ {k} (block new)"));
        }
    }
    let total = out.len();
    out.truncate(max);
    if total > max {
        out.push(format!("... {} lines more", total - max));
    }
    format!("{changed} block(s) differ:\n{}", out.join("\n"))
}

/// Two versions of a line of as many words: their label (the words up
/// to the first ending in `:`) and the words that differ, with `...`
/// where equal words were left out; other pairs as they are.
pub(super) fn changed_words(old: &str, new: &str) -> (String, String) {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.split(' ').collect(), new.split(' ').collect());
    if a.len() != b.len() {
        return (old.to_string(), new.to_string());
    }
    let label = a.iter().position(|w| w.ends_with(':')).map_or(0, |i| i + 1);
    if a[..label] != b[..label] {
        return (old.to_string(), new.to_string());
    }
    let pick = |x: &[&str], y: &[&str]| {
        let mut words: Vec<&str> = x[..label].to_vec();
        let mut skipped = false;
        for (i, w) in x.iter().enumerate().skip(label) {
            if *w == y[i] {
                if !skipped {
                    words.push("...");
                    skipped = true;
                }
            } else {
                words.push(w);
                skipped = false;
            }
        }
        words.join(" ")
    };
    (pick(&a, &b), pick(&b, &a))
}
