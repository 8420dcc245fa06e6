//! Kernel families, a folder each: the whole-matrix kernel (`smem`), the
//! panels (`panel`, with the register panel `panel::reg`), the tensor-core
//! update (`trailing_tc`, with the Q operations' kernels `trailing_tc::q`)
//! and the checks (`util`). Each NVRTC program is `.cu` files next to the
//! Rust module that launches it, embedded behind the shared header-free
//! `prelude.cu`, with entry points named `<program>_<variant>_f32` and
//! compile-time constants passed as `-D` defines from the plan.

pub(crate) mod panel;
pub(crate) mod smem;
pub(crate) mod trailing_tc;
pub(crate) mod util;

pub(crate) use crate::compile::nvrtc::KernelSource;

/// Every family, for the source checks.
#[cfg(test)]
pub(crate) const ALL: &[&KernelSource] = &[
    &smem::SOURCE,
    &panel::SOURCE,
    &panel::reg::SOURCE,
    &trailing_tc::SOURCE,
    &util::SOURCE,
    &trailing_tc::q::SOURCE,
];

/// Raises `f`'s dynamic shared-memory limit to at least `bytes`, never
/// lowering it: a launch recorded in a CUDA graph (graph.rs) replays with
/// the shared memory it was recorded with, after other calls (other
/// orders) may have set the limit for smaller launches of the same kernel.
pub(crate) fn raise_dynamic_smem(
    f: &cudarc::driver::CudaFunction,
    bytes: usize,
    entry: &str,
) -> Result<(), qr_core::QrError> {
    use cudarc::driver::sys::CUfunction_attribute as FnAttr;

    use crate::error::DriverContext;
    let what = || format!("raising the shared-memory limit of {entry}");
    let now = f
        .get_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        .ctx(&what())?;
    let want = i32::try_from(bytes).map_err(|_| qr_core::QrError::Unsupported {
        message: format!("{bytes} bytes of shared memory for {entry}"),
    })?;
    if want > now {
        f.set_attribute(
            FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            want,
        )
        .ctx(&what())?;
    }
    Ok(())
}

/// Grid size as the driver wants it; shapes are validated long before, so a
/// value past `u32` is a planning bug reported as an error, not a panic.
pub(crate) fn grid_dim(x: usize) -> Result<u32, qr_core::QrError> {
    u32::try_from(x).map_err(|_| qr_core::QrError::Unsupported {
        message: format!("a grid dimension of {x} blocks exceeds what CUDA can launch"),
    })
}

/// A dimension as a kernel's `int` argument; one past `i32` is an error
/// naming the kernel family, not a wrapped value.
pub(crate) fn kernel_int(x: usize, family: &str) -> Result<i32, qr_core::QrError> {
    i32::try_from(x).map_err(|_| qr_core::QrError::Unsupported {
        message: format!("a dimension of {x} exceeds the {family} kernels' int"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source defines entry `name` when it holds `__global__ ... name(`.
    fn defines_entry(src: &str, name: &str) -> bool {
        src.match_indices(name).any(|(i, _)| {
            let before = &src[..i];
            let after = &src[i + name.len()..];
            let decl_start = before.rfind(';').or(before.rfind('}')).unwrap_or(0);
            before[decl_start..].contains("extern \"C\" __global__")
                && after.trim_start().starts_with('(')
        })
    }

    #[test]
    fn every_loaded_entry_point_is_in_its_source() {
        for fam in ALL {
            for entry in fam.entries {
                assert!(
                    entry.starts_with(&format!("{}_", fam.family)) && entry.ends_with("_f32"),
                    "{entry} is not named <family>_<variant>_f32"
                );
                assert!(
                    defines_entry(fam.source, entry),
                    "{entry} is not a kernel of {}",
                    fam.family
                );
            }
        }
    }

    #[test]
    fn every_required_define_is_checked_by_its_source() {
        for fam in ALL {
            for d in fam.defines {
                assert!(
                    fam.source.contains(&format!("#ifndef {d}")),
                    "{} does not check {d}",
                    fam.family
                );
            }
        }
    }

    #[test]
    fn sources_are_header_free() {
        for fam in ALL {
            assert!(
                !fam.source.contains("#include"),
                "{} includes a header",
                fam.family
            );
        }
    }
}
