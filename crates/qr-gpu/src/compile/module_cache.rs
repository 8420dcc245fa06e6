//! The engine's compiled-module cache, keyed by (kernel family, defines,
//! architecture): each combination is compiled and loaded once per engine,
//! its PTX compiled once per machine (ptx_cache.rs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};

use crate::compile::nvrtc;
use crate::compile::nvrtc::KernelSource;
use crate::compile::ptx_cache::PtxCache;
use crate::error::{DriverContext, GpuError};

/// What identifies one compiled module.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ModuleKey {
    /// Kernel family (`"smem"`, `"panel"`, `"util"`).
    pub family: &'static str,
    /// `-D` defines, in the order the plan emits them.
    pub defines: Vec<(String, String)>,
    /// Compute capability compiled for.
    pub arch: (i32, i32),
}

/// Loaded modules and the functions taken from them, and the PTX kept on
/// disk between processes.
#[derive(Debug, Default)]
pub(crate) struct ModuleCache {
    modules: Mutex<HashMap<ModuleKey, Arc<CudaModule>>>,
    functions: Mutex<HashMap<(ModuleKey, &'static str), CudaFunction>>,
    disk: PtxCache,
}

impl ModuleCache {
    /// An empty cache whose modules' PTX is kept in `disk`.
    pub(crate) fn new(disk: PtxCache) -> Self {
        Self {
            disk,
            ..Self::default()
        }
    }

    /// Where modules' PTX is kept between processes.
    pub(crate) fn disk(&self) -> &PtxCache {
        &self.disk
    }

    /// Entry point `entry` of `src` compiled with `defines` for `arch`,
    /// compiling and loading the module on first use.
    pub(crate) fn function(
        &self,
        ctx: &Arc<CudaContext>,
        src: &KernelSource,
        defines: &[(String, String)],
        arch: (i32, i32),
        entry: &'static str,
    ) -> Result<CudaFunction, GpuError> {
        let names: Vec<&str> = defines.iter().map(|(k, _)| k.as_str()).collect();
        if !src.entries.contains(&entry) || names != src.defines {
            return Err(GpuError::Compile {
                family: src.family,
                options: crate::compile::nvrtc::options(defines, arch),
                log: format!(
                    "launcher asked for `{entry}` with defines {names:?}; the source has {:?} and checks {:?}",
                    src.entries, src.defines
                ),
            });
        }
        let key = ModuleKey {
            family: src.family,
            defines: defines.to_vec(),
            arch,
        };
        let fkey = (key.clone(), entry);
        if let Some(f) = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&fkey)
        {
            return Ok(f.clone());
        }
        let module = {
            let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
            match modules.get(&key) {
                Some(m) => m.clone(),
                None => {
                    let what = || format!("loading module `{}`", src.family);
                    let (ptx, cached) = nvrtc::compile_cached(src, defines, arch, &self.disk)?;
                    let m = match ctx.load_module(ptx) {
                        Ok(m) => m,
                        // A cached file the driver rejects (written by
                        // another build, damaged): compile afresh, which
                        // also replaces the file.
                        Err(_) if cached => {
                            let ptx = nvrtc::compile_into(src, defines, arch, &self.disk)?;
                            ctx.load_module(ptx).ctx(&what())?
                        }
                        Err(e) => return Err(e).ctx(&what()),
                    };
                    modules.insert(key, m.clone());
                    m
                }
            }
        };
        let f = module
            .load_function(entry)
            .ctx(&format!("loading function `{entry}`"))?;
        self.functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(fkey, f.clone());
        Ok(f)
    }

    /// Number of modules compiled so far.
    pub(crate) fn len(&self) -> usize {
        self.modules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
