//! Runtime selection of the instruction set for the vector loops.
//!
//! The kernels of this crate are plain Rust loops that the compiler
//! vectorizes. Built for the baseline `x86_64` target they would use 128-bit
//! SSE2 only, so each kernel entry point is compiled three times (AVX-512,
//! AVX2 + FMA, baseline) and [`multiversion!`] picks one at run time. The
//! bodies it wraps are `#[inline(always)]`, so everything they call is
//! compiled inside the wider-ISA copy too. faer's matrix products do their
//! own dispatch.

/// The instruction set the kernels run with on this CPU, for `describe()`.
pub(crate) fn detected() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return "avx512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2";
        }
    }
    "baseline"
}

/// Defines `fn $name(args) -> ret` that calls the `#[inline(always)]` body
/// `$body(args)` compiled for the widest instruction set the CPU has.
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:path
    ) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                fn avx512($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                {
                    // SAFETY: `avx512` only enables target features that the
                    // running CPU was just detected to support.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: `avx2` only enables target features that the
                    // running CPU was just detected to support.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

pub(crate) use multiversion;
