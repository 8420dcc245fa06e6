//! The compiled kernels' PTX kept on disk between processes, so that only
//! a process's first use of a kernel variant ever on a machine waits for
//! NVRTC (about a second a module). The driver keeps its own cache of the
//! machine code it assembles from PTX (`CUDA_CACHE_PATH`), so a cached
//! module loads without either compiler.
//!
//! A file's name is the SHA-256 of everything the PTX depends on: the
//! family, its full source text, the NVRTC options (defines and target)
//! and NVRTC's version. Nothing about the inputs factored enters it. The
//! cache is best effort: a directory that cannot be made or written, or a
//! file that is unreadable, incomplete or rejected by the driver, means
//! compiling as if there were no cache.
//!
//! Where: `QR_GPU_CACHE_DIR` when set (empty: no cache), else
//! `$XDG_CACHE_HOME/qr-rs/ptx`, else `$HOME/.cache/qr-rs/ptx`.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Last line of every cache file: a file without it was cut short.
const END: &str = "// qr-rs ptx cache: end\n";

/// What a module's PTX depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key<'a> {
    /// Kernel family.
    pub family: &'a str,
    /// Its full source text.
    pub source: &'a str,
    /// NVRTC options: defines and target.
    pub options: &'a [String],
    /// NVRTC's version.
    pub version: (i32, i32),
}

/// A directory of PTX files, or none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PtxCache {
    dir: Option<PathBuf>,
}

impl PtxCache {
    /// The cache in `dir`, or no cache.
    pub(crate) fn at(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// Whether files are kept at all.
    pub(crate) fn is_on(&self) -> bool {
        self.dir.is_some()
    }

    /// The cache the environment names (module docs).
    pub(crate) fn from_env() -> Self {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let dir = match std::env::var_os("QR_GPU_CACHE_DIR") {
            Some(v) if v.is_empty() => None,
            Some(v) => Some(PathBuf::from(v)),
            None => var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|d| d.join("qr-rs").join("ptx")),
        };
        Self::at(dir)
    }

    /// The file of `key`'s module.
    fn path(&self, key: &Key) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut h = Sha256::new();
        let version = format!("nvrtc {}.{}", key.version.0, key.version.1);
        let parts = [key.family, &version, key.source].into_iter();
        for part in parts.chain(key.options.iter().map(String::as_str)) {
            h.update(part.len().to_le_bytes());
            h.update(part.as_bytes());
        }
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Some(dir.join(format!("{}-{hex}.ptx", key.family)))
    }

    /// The cached PTX of `key`'s module, if a complete file holds it.
    pub(crate) fn load(&self, key: &Key) -> Option<String> {
        let text = std::fs::read_to_string(self.path(key)?).ok()?;
        // PTX holds no NUL (the driver's loader takes a C string); a file
        // that does is damaged.
        text.strip_suffix(END)
            .filter(|t| !t.contains('\0'))
            .map(str::to_string)
    }

    /// Keeps `ptx` for `key`'s module; failures are ignored (the next process
    /// compiles again). The file appears whole or not at all: it is
    /// written under a name of this process's and renamed.
    pub(crate) fn store(&self, key: &Key, ptx: &str) {
        let Some(path) = self.path(key) else {
            return;
        };
        let Some(dir) = path.parent() else {
            return;
        };
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(ptx.as_bytes())?;
            f.write_all(END.as_bytes())?;
            f.sync_all()
        });
        if written.and_then(|()| std::fs::rename(&tmp, &path)).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(family: &'a str, source: &'a str, options: &'a [String]) -> Key<'a> {
        Key {
            family,
            source,
            options,
            version: (13, 0),
        }
    }

    fn opts(d: &str) -> Vec<String> {
        vec!["--gpu-architecture=compute_90".into(), format!("-DX={d}")]
    }

    #[test]
    fn round_trip_keyed_on_everything_the_ptx_depends_on() {
        let dir = tempfile::tempdir().unwrap();
        let c = PtxCache::at(Some(dir.path().to_path_buf()));
        let (o1, o2) = (opts("1"), opts("2"));
        let k = key("f", "src", &o1);
        assert_eq!(c.load(&k), None);
        c.store(&k, ".version 9.0\n");
        assert_eq!(c.load(&k).as_deref(), Some(".version 9.0\n"));
        // Another family, source, option or compiler is another module.
        assert_eq!(c.load(&key("g", "src", &o1)), None);
        assert_eq!(c.load(&key("f", "src ", &o1)), None);
        assert_eq!(c.load(&key("f", "src", &o2)), None);
        assert_eq!(
            c.load(&Key {
                version: (13, 1),
                ..k
            }),
            None
        );
        // Parts do not run into each other.
        assert_eq!(c.load(&key("fs", "rc", &o1)), None);
        // No file left but the module's.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn cut_short_files_and_no_directory_mean_compiling() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts("1");
        let k = key("f", "src", &o);
        let c = PtxCache::at(Some(dir.path().join("a").join("b")));
        c.store(&k, "ptx\n");
        let path = c.path(&k).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 3]).unwrap();
        assert_eq!(c.load(&k), None);
        std::fs::write(&path, text.replacen("ptx", "p\0x", 1)).unwrap();
        assert_eq!(c.load(&k), None);
        std::fs::write(&path, &text).unwrap();
        assert_eq!(c.load(&k).as_deref(), Some("ptx\n"));
        // A directory that cannot be made: nothing kept, nothing fails.
        let file = dir.path().join("plain");
        std::fs::write(&file, "").unwrap();
        let blocked = PtxCache::at(Some(file.join("sub")));
        blocked.store(&k, "ptx\n");
        assert_eq!(blocked.load(&k), None);
        let none = PtxCache::at(None);
        none.store(&k, "ptx\n");
        assert_eq!(none.load(&k), None);
    }
}
