//! Run-time compilation of the embedded kernel sources for the device's own
//! architecture. Failures keep NVRTC's complete log.

use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, compile_ptx_with_opts};

use crate::error::GpuError;
use crate::kernels::KernelSource;

/// NVRTC options for `defines` and compute capability `arch`.
///
/// PTX for `compute_XY` of the device itself: the driver turns it into that
/// device's machine code when the module loads, so a newer device is never
/// handed code tuned for an older one. Kernels include no headers (NVRTC
/// on a stock driver finds none), so no include path is given.
pub(crate) fn options(defines: &[(String, String)], arch: (i32, i32)) -> Vec<String> {
    with_target(defines, format!("compute_{}{}", arch.0, arch.1))
}

fn with_target(defines: &[(String, String)], target: String) -> Vec<String> {
    let mut opts = vec![format!("--gpu-architecture={target}")];
    opts.extend(defines.iter().map(|(k, v)| format!("-D{k}={v}")));
    opts
}

/// Compiles `src` with `defines` for `arch`.
pub(crate) fn compile(
    src: &KernelSource,
    defines: &[(String, String)],
    arch: (i32, i32),
) -> Result<Ptx, GpuError> {
    run(src, options(defines, arch))
}

/// Compiles `src` with `defines` through to `sm_XY` machine code, which
/// also runs the assembler over the kernels' inline PTX: PTX alone is not
/// checked against the architecture's instruction set until a driver
/// loads it.
pub(crate) fn compile_machine_code(
    src: &KernelSource,
    defines: &[(String, String)],
    arch: (i32, i32),
) -> Result<(), GpuError> {
    run(
        src,
        with_target(defines, format!("sm_{}{}", arch.0, arch.1)),
    )
    .map(|_| ())
}

fn run(src: &KernelSource, options: Vec<String>) -> Result<Ptx, GpuError> {
    let opts = CompileOptions {
        options: options.clone(),
        name: Some(format!("{}.cu", src.family)),
        ..Default::default()
    };
    compile_ptx_with_opts(src.source, opts).map_err(|e| {
        let log = match &e {
            CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        };
        GpuError::Compile {
            family: src.family,
            options,
            log,
        }
    })
}
