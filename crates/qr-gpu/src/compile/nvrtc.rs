//! Run-time compilation of the embedded kernel sources for the device's own
//! architecture. Failures keep NVRTC's complete log.

use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, compile_ptx_with_opts};

use crate::compile::ptx_cache::{Key, PtxCache};
use crate::error::GpuError;

/// One embedded kernel family.
#[derive(Debug)]
pub(crate) struct KernelSource {
    /// Family name, also the module cache's key and the NVRTC program name.
    pub family: &'static str,
    /// `prelude.cu` followed by the family's own source.
    pub source: &'static str,
    /// Entry points its launcher loads.
    pub entries: &'static [&'static str],
    /// Names of the `-D` defines the source requires.
    pub defines: &'static [&'static str],
}

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

/// PTX of `src` with `defines` for `arch` through `cache`: the PTX a
/// previous compile kept there, else NVRTC's, kept for the next process.
/// `Ok((ptx, true))` when it came from the cache (the caller compiles
/// afresh with [`compile_into`] if the driver rejects it).
pub(crate) fn compile_cached(
    src: &KernelSource,
    defines: &[(String, String)],
    arch: (i32, i32),
    cache: &PtxCache,
) -> Result<(Ptx, bool), GpuError> {
    let options = options(defines, arch);
    if let Some(version) = version()
        && let Some(text) = cache.load(&key(src, &options, version))
    {
        return Ok((Ptx::from_src(text), true));
    }
    compile_into(src, defines, arch, cache).map(|ptx| (ptx, false))
}

/// Compiles with NVRTC and keeps the PTX in `cache`.
pub(crate) fn compile_into(
    src: &KernelSource,
    defines: &[(String, String)],
    arch: (i32, i32),
    cache: &PtxCache,
) -> Result<Ptx, GpuError> {
    let options = options(defines, arch);
    let ptx = run(src, options.clone())?;
    if let (Some(version), Some(text)) = (version(), text(&ptx)) {
        cache.store(&key(src, &options, version), &text);
    }
    Ok(ptx)
}

fn key<'a>(src: &'a KernelSource, options: &'a [String], version: (i32, i32)) -> Key<'a> {
    Key {
        family: src.family,
        source: src.source,
        options,
        version,
    }
}

/// NVRTC's version, or `None` if it cannot say (then nothing is cached).
fn version() -> Option<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC was found loadable before any compile (the engine's and
    // `compile_plans`' library checks); the call writes two ints.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// The text of a PTX image NVRTC returned (up to its terminating NUL).
fn text(ptx: &Ptx) -> Option<String> {
    let bytes = ptx.as_bytes()?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8(bytes[..end].to_vec()).ok()
}

/// Compiles `src` with `defines` through to `sm_XY` machine code, which
/// also runs the assembler over the kernels' inline PTX (PTX alone is not
/// checked against the architecture's instruction set until a driver
/// loads it), and returns NVRTC's log: the assembler's resource lines
/// (registers, spills, static shared memory) of every entry.
pub(crate) fn compile_machine_code(
    src: &KernelSource,
    defines: &[(String, String)],
    arch: (i32, i32),
) -> Result<String, GpuError> {
    use cudarc::nvrtc::result;
    use std::ffi::CString;

    let mut options = with_target(defines, format!("sm_{}{}", arch.0, arch.1));
    options.push("--ptxas-options=-v".to_string());
    let failed = |options: &[String], log: String| GpuError::Compile {
        family: src.family,
        options: options.to_vec(),
        log,
    };
    let (code, name) = match (
        CString::new(src.source),
        CString::new(format!("{}.cu", src.family)),
    ) {
        (Ok(c), Ok(n)) => (c, n),
        _ => return Err(failed(&options, "a NUL byte in the source".to_string())),
    };
    let prog = result::create_program(&code, Some(&name))
        .map_err(|e| failed(&options, format!("{e:?}")))?;
    // SAFETY: `prog` was created above and is destroyed once, below; the
    // options are NUL-free strings (defines and flags of this crate).
    let compiled = unsafe { result::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| {
            let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        })
        .unwrap_or_default();
    // SAFETY: as above; nothing uses `prog` after this.
    let _ = unsafe { result::destroy_program(prog) };
    match compiled {
        Ok(()) => Ok(log),
        Err(e) => Err(failed(&options, format!("{e:?}\n{log}"))),
    }
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
