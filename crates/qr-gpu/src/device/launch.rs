//! What a kernel launcher needs from the engine: the device's properties,
//! its context and the compiled-module cache. Launchers take this and a
//! stream, never the engine, so that `kernels/` sits below the planner and
//! the engine (engine -> graph -> plan -> kernels -> launch).

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use qr_core::QrError;

use crate::compile::module_cache::ModuleCache;
use crate::compile::nvrtc::KernelSource;
use crate::compile::ptx_cache::PtxCache;
use crate::device::probe::DeviceInfo;
use crate::error::DriverContext;

/// The launch context of one device.
#[derive(Debug)]
pub(crate) struct Launch {
    info: DeviceInfo,
    ctx: Arc<CudaContext>,
    cache: ModuleCache,
}

impl Launch {
    /// The context of device `info`, its modules compiled into `cache`.
    pub(crate) fn new(info: DeviceInfo, ctx: Arc<CudaContext>, cache: ModuleCache) -> Self {
        Self { info, ctx, cache }
    }

    /// The device's description.
    pub(crate) fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The context.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Entry point `entry` of `src` with `defines`, compiled for this device.
    pub(crate) fn function(
        &self,
        src: &KernelSource,
        defines: &[(String, String)],
        entry: &'static str,
    ) -> Result<CudaFunction, QrError> {
        Ok(self
            .cache
            .function(&self.ctx, src, defines, self.info.compute_capability, entry)?)
    }

    /// Where the modules' PTX is kept between processes.
    pub(crate) fn ptx_cache(&self) -> &PtxCache {
        self.cache.disk()
    }

    /// Modules compiled so far.
    pub(crate) fn modules_compiled(&self) -> usize {
        self.cache.len()
    }

    /// Queues on `stream` `count` 32-bit words of `value` at `dst`.
    pub(crate) fn memset_u32(
        &self,
        stream: &CudaStream,
        dst: u64,
        value: u32,
        count: usize,
    ) -> Result<(), QrError> {
        let s = stream.cu_stream();
        // SAFETY: `dst` addresses at least `count` words owned by the caller.
        self.driver("cuMemsetD32Async", || unsafe {
            cudarc::driver::sys::cuMemsetD32Async(dst, value, count, s)
        })
    }

    /// Queues on `stream` a device-to-device copy of `bytes`.
    pub(crate) fn copy_dtod(
        &self,
        stream: &CudaStream,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<(), QrError> {
        let s = stream.cu_stream();
        // SAFETY: both ranges are `bytes` long, owned by the caller, disjoint.
        self.driver("cuMemcpyDtoDAsync", || unsafe {
            cudarc::driver::sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s)
        })
    }

    /// Binds the context to this thread, then makes the driver call `what`.
    fn driver(
        &self,
        what: &str,
        call: impl FnOnce() -> cudarc::driver::sys::CUresult,
    ) -> Result<(), QrError> {
        self.ctx.bind_to_thread().ctx("binding the context")?;
        call().result().ctx(what)?;
        Ok(())
    }
}
