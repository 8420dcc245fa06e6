//! Finding a usable device without ever panicking.
//!
//! cudarc's dynamically loaded entry points panic when their library is
//! missing, so every library is checked with its `is_culib_present()` before
//! the first call into it.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, DriverError};
use qr_core::QrError;

/// What the engine reads off a device to plan and launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, as the driver reports it.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Largest dynamic shared memory one block may opt into, in bytes.
    pub smem_per_block_optin: usize,
    /// Shared memory per multiprocessor, in bytes.
    pub smem_per_sm: usize,
    /// L2 cache size, in bytes.
    pub l2_bytes: usize,
    /// Global memory, in bytes.
    pub total_mem: usize,
    /// Whether cooperative launches (all blocks co-resident) are supported.
    pub cooperative_launch: bool,
    /// Driver API version (e.g. 13000).
    pub driver_version: i32,
}

impl DeviceInfo {
    /// The boards planned for without a device (`qr plan --device-model`,
    /// the golden manifest, the compile tests), by their published SM
    /// counts, the shared memory a block may opt into (CUDA C++ Programming
    /// Guide, "Technical Specifications per Compute Capability") and L2:
    /// A100 (sm_80), RTX A6000 (sm_86), L40S (sm_89), H100 SXM and H200
    /// (sm_90), B200 (sm_100), RTX 5090 (sm_120).
    pub fn models() -> Vec<DeviceInfo> {
        let board = |name, cc, sms, optin_kib: usize, l2_mib: usize| {
            Self::modelled(name, cc, sms, optin_kib * 1024, l2_mib << 20)
        };
        vec![
            board("A100", (8, 0), 108, 163, 40),
            board("RTX A6000", (8, 6), 84, 99, 6),
            board("L40S", (8, 9), 142, 99, 96),
            board("H100 SXM 80GB", (9, 0), 132, 227, 50),
            board("H200", (9, 0), 132, 227, 60),
            board("B200", (10, 0), 148, 227, 126),
            board("RTX 5090", (12, 0), 170, 99, 96),
        ]
    }

    /// A device described by its published figures, for planning
    /// ([`crate::plan`]) and compiling ([`crate::compile_plans`]) without
    /// one: compute capability `cc`, `sm_count` SMs, `smem_optin` bytes of
    /// shared memory a block may opt into (an SM holds 1 KiB more, as on
    /// sm_80 to sm_120), `l2_bytes` of L2; ordinal 0, 80 GiB, cooperative
    /// launches, a CUDA 13.0 driver.
    pub fn modelled(
        name: &str,
        cc: (i32, i32),
        sm_count: u32,
        smem_optin: usize,
        l2_bytes: usize,
    ) -> Self {
        Self {
            ordinal: 0,
            name: name.to_string(),
            compute_capability: cc,
            sm_count,
            smem_per_block_optin: smem_optin,
            smem_per_sm: smem_optin + 1024,
            l2_bytes,
            total_mem: 80 << 30,
            cooperative_launch: true,
            driver_version: 13000,
        }
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ma, mi) = self.compute_capability;
        write!(
            f,
            "{} (device {}, sm_{ma}{mi}, {} SMs, {} KiB smem/block opt-in, {} MiB L2, {} GiB, driver {}.{})",
            self.name,
            self.ordinal,
            self.sm_count,
            self.smem_per_block_optin / 1024,
            self.l2_bytes >> 20,
            self.total_mem >> 30,
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10,
        )
    }
}

fn unavailable(reason: impl Into<String>) -> QrError {
    QrError::Unavailable {
        backend: "gpu".to_string(),
        reason: reason.into(),
    }
}

/// `Ok` where `present` (a library's `is_culib_present()`), else why not:
/// the `what` library (file `name`) could not be loaded.
fn loaded(present: bool, what: &str, name: &str) -> Result<(), QrError> {
    if present {
        Ok(())
    } else {
        Err(unavailable(format!(
            "the {what} library ({name}) could not be loaded"
        )))
    }
}

/// Checks that the driver and NVRTC libraries can be loaded. Must come before
/// any other cudarc call.
pub(crate) fn check_core_libraries() -> Result<(), QrError> {
    // SAFETY: these only try to open the shared libraries by name and close
    // them again; no symbol is called.
    loaded(
        unsafe { cudarc::driver::sys::is_culib_present() },
        "CUDA driver",
        "libcuda",
    )?;
    check_nvrtc()
}

/// Checks that NVRTC can be loaded (all that compiling needs; no driver).
pub(crate) fn check_nvrtc() -> Result<(), QrError> {
    // SAFETY: only opens and closes the library; no symbol is called.
    loaded(
        unsafe { cudarc::nvrtc::sys::is_culib_present() },
        "NVRTC",
        "libnvrtc",
    )
}

/// Checks that cuBLAS can be loaded (the blocked paths need it).
pub(crate) fn check_cublas() -> Result<(), QrError> {
    // SAFETY: only opens and closes the library.
    loaded(
        unsafe { cudarc::cublas::sys::is_culib_present() },
        "cuBLAS",
        "libcublas",
    )
}

/// Checks that cuSOLVER can be loaded (the cuSOLVER peer needs it).
pub(crate) fn check_cusolver() -> Result<(), QrError> {
    // SAFETY: only opens and closes the library.
    loaded(
        unsafe { cudarc::cusolver::sys::is_culib_present() },
        "cuSOLVER",
        "libcusolver",
    )
}

/// Describes device 0, or says why there is no usable CUDA device. Never panics.
pub fn probe() -> Result<DeviceInfo, QrError> {
    probe_device(0)
}

/// Describes device `ordinal`, or says why it cannot be used. Never panics.
pub fn probe_device(ordinal: usize) -> Result<DeviceInfo, QrError> {
    check_core_libraries()?;
    let count = CudaContext::device_count()
        .map_err(|e| unavailable(format!("the CUDA driver did not initialise: {e:?}")))?;
    if count <= 0 {
        return Err(unavailable("the CUDA driver sees no device"));
    }
    if ordinal >= count as usize {
        return Err(unavailable(format!(
            "device {ordinal} requested, the driver sees {count}"
        )));
    }
    let ctx = CudaContext::new(ordinal)
        .map_err(|e| unavailable(format!("no context on device {ordinal}: {e:?}")))?;
    read_info(&ctx).map_err(|e| unavailable(format!("device {ordinal} attributes: {e:?}")))
}

/// Reads the attributes the planner uses from an existing context.
pub(crate) fn read_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, DriverError> {
    let attr = |a: Attr| ctx.attribute(a);
    let mut driver_version = 0;
    // SAFETY: the driver is loaded (checked before any context exists) and
    // the pointer is to a live local.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }.result()?;
    Ok(DeviceInfo {
        ordinal: ctx.ordinal(),
        name: ctx.name()?,
        compute_capability: ctx.compute_capability()?,
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        smem_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as usize,
        smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as usize,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
        total_mem: ctx.total_mem()?,
        cooperative_launch: attr(Attr::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
        driver_version,
    })
}
