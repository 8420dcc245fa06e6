//! Compiling kernels: NVRTC itself ([`nvrtc`]: a family's source, defines
//! and architecture to PTX), the in-process module cache of an engine
//! ([`module_cache`]) and the on-disk PTX cache shared across processes
//! ([`ptx_cache`]). What a plan compiles is the planner's
//! (`plan::modules`).

pub(crate) mod module_cache;
pub(crate) mod nvrtc;
pub(crate) mod ptx_cache;
