//! `qr_rs._native`: the Rust half of the `qr_rs` Python package.
//!
//! The CPU functions take objects with `__dlpack__` (any leading batch
//! dimensions, then `n x n` float32 matrices), check them, copy them
//! while the GIL is held, compute on the CPU backend with the GIL
//! released, and return their results as [`export::Array`]s that the
//! Python layer hands to the caller's framework (`torch.from_dlpack`,
//! `numpy.from_dlpack`). The `*_cuda` functions ([`cuda`]) take CUDA
//! tensors, results included (allocated by the caller's framework), and
//! queue the CUDA engine on the caller's stream without copying. The
//! contract (layout, `geqrf`'s convention, `info` codes) is `qr_core`'s;
//! the Python docstrings are in `python/qr_rs/__init__.py`.

#![warn(missing_docs)]

mod cuda;
mod export;
mod import;

use std::sync::OnceLock;

use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use qr_core::{ApplyQ, Backend, Info, QrError, Reflectors, Shape, Side, Transpose};
use qr_cpu::CpuBackend;

use export::{Array, Buffer};
use import::{Input, import_f32};

/// The process's CPU engine, created on first use; `CpuBackend` is `Sync`
/// and its threads are rayon's global pool, shared by concurrent callers.
fn cpu() -> &'static CpuBackend {
    static CPU: OnceLock<CpuBackend> = OnceLock::new();
    CPU.get_or_init(CpuBackend::new)
}

fn to_py_err(e: QrError) -> PyErr {
    match e {
        QrError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        QrError::SizeOverflow { .. } => PyOverflowError::new_err(e.to_string()),
        QrError::LengthMismatch { .. } | QrError::Unsupported { .. } => {
            PyValueError::new_err(e.to_string())
        }
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A shape as Python prints a tuple: `(3,)`, `(2, 4, 4)`.
fn tuple(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A checked batch of square matrices: its batch dimensions and order.
struct Square {
    batch_dims: Vec<usize>,
    n: usize,
    shape: Shape,
}

impl Square {
    /// Checks that `input` (argument `name`) has shape `(..., n, n)`.
    fn of(input: &Input, name: &str) -> PyResult<Self> {
        Self::of_dims(&input.shape, name)
    }

    /// Checks that `dims` (of argument `name`) is `(..., n, n)`.
    fn of_dims(dims: &[usize], name: &str) -> PyResult<Self> {
        let r = dims.len();
        if r < 2 || dims[r - 1] != dims[r - 2] {
            return Err(PyValueError::new_err(format!(
                "{name}: expected a batch of square matrices of shape (..., n, n), got shape {}",
                tuple(dims)
            )));
        }
        let batch_dims = dims[..r - 2].to_vec();
        let n = dims[r - 1];
        // An empty tensor may have batch dimensions whose product, taken
        // before its zero, overflows.
        let batch = if batch_dims.contains(&0) {
            Some(0)
        } else {
            batch_dims.iter().try_fold(1usize, |p, &d| p.checked_mul(d))
        };
        let batch = batch.ok_or_else(|| {
            PyOverflowError::new_err(format!(
                "{name}: the batch of shape {} overflows a count",
                tuple(dims)
            ))
        })?;
        let shape = Shape::new(batch, n).map_err(to_py_err)?;
        Ok(Self {
            batch_dims,
            n,
            shape,
        })
    }

    /// The shape of one output per matrix plus `tail`.
    fn dims(&self, tail: &[usize]) -> Vec<usize> {
        let mut d = self.batch_dims.clone();
        d.extend_from_slice(tail);
        d
    }

    fn info(&self, info: Vec<Info>) -> PyResult<Array> {
        let codes = info.into_iter().map(|i| i.0).collect();
        Array::new(&self.batch_dims, Buffer::I32(codes))
    }

    fn f32(&self, tail: &[usize], data: Vec<f32>) -> PyResult<Array> {
        Array::new(&self.dims(tail), Buffer::F32(data))
    }

    /// Checks `tau` (shape `(..., k)`, `k <= n`, the batch of `H`) and
    /// returns `(H, tau)` with `tau` padded by zeros to `n` per matrix and
    /// `H`'s columns `k..` zeroed below the diagonal: the reflectors
    /// `H_k, ..., H_{n-1}` become identities and their stored vectors
    /// unread, as torch's `householder_product` and `ormqr` treat a short
    /// `tau`.
    fn reflectors(&self, mut h: Input, tau: Input) -> PyResult<(Vec<f32>, Vec<f32>)> {
        let dims = &tau.shape;
        let k = dims.last().copied().unwrap_or(0);
        if dims.len() != self.batch_dims.len() + 1
            || dims[..dims.len() - 1] != self.batch_dims[..]
            || k > self.n
        {
            return Err(PyValueError::new_err(format!(
                "tau: expected shape {}+(k,) with k <= n = {} to match H of shape {}, \
                 got shape {}",
                tuple(&self.batch_dims),
                self.n,
                tuple(&self.dims(&[self.n, self.n])),
                tuple(dims)
            )));
        }
        if k == self.n {
            return Ok((h.data, tau.data));
        }
        let n = self.n;
        let mut padded = Vec::new();
        padded
            .try_reserve_exact(self.shape.tau_len())
            .map_err(|_| PyMemoryError::new_err("tau: cannot allocate its padded copy"))?;
        for t in tau.data.chunks_exact(k.max(1)).take(self.shape.batch()) {
            padded.extend_from_slice(&t[..k]);
            padded.resize(padded.len() + n - k, 0.0);
        }
        if k == 0 {
            padded.resize(self.shape.tau_len(), 0.0);
        }
        for m in h.data.chunks_exact_mut(n * n) {
            for (i, row) in m.chunks_exact_mut(n).enumerate() {
                if i > k {
                    row[k..i].fill(0.0);
                }
            }
        }
        Ok((h.data, padded))
    }
}

/// `geqrf(a) -> (h, tau, info)`.
#[pyfunction]
fn geqrf(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<(Array, Array, Array)> {
    let a = import_f32(a, "A")?;
    let s = Square::of(&a, "A")?;
    let f = py
        .detach(|| qr_core::geqrf(cpu(), s.shape, &a.data))
        .map_err(to_py_err)?;
    Ok((
        s.f32(&[s.n, s.n], f.h)?,
        s.f32(&[s.n], f.tau)?,
        s.info(f.info)?,
    ))
}

/// `orgqr(h, tau) -> (q, info)`.
#[pyfunction]
fn orgqr(py: Python<'_>, h: &Bound<'_, PyAny>, tau: &Bound<'_, PyAny>) -> PyResult<(Array, Array)> {
    let h = import_f32(h, "H")?;
    let s = Square::of(&h, "H")?;
    let tau = import_f32(tau, "tau")?;
    let (h, tau) = s.reflectors(h, tau)?;
    let q = py
        .detach(|| qr_core::orgqr(cpu(), s.shape, &h, &tau))
        .map_err(to_py_err)?;
    Ok((s.f32(&[s.n, s.n], q.data)?, s.info(q.info)?))
}

/// `ormqr(h, tau, c, left, transpose) -> (c', info)`.
#[pyfunction]
#[pyo3(signature = (h, tau, c, left, transpose))]
fn ormqr(
    py: Python<'_>,
    h: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
    left: bool,
    transpose: bool,
) -> PyResult<(Array, Array)> {
    let h = import_f32(h, "H")?;
    let s = Square::of(&h, "H")?;
    let tau = import_f32(tau, "tau")?;
    let mut c = import_f32(c, "C")?;
    let (h, tau) = s.reflectors(h, tau)?;
    let op = apply_q(left, transpose);
    let k = c_cols(&s, &c.shape, left)?;
    let mut info = vec![Info::OK; s.shape.info_len()];
    py.detach(|| {
        let f = Reflectors::new(s.shape, &h, &tau)?;
        ApplyQ::check(s.shape, k, c.data.len(), info.len())?;
        cpu().ormqr_into(f, op, k, &mut c.data, &mut info)
    })
    .map_err(to_py_err)?;
    let tail = if left { [s.n, k] } else { [k, s.n] };
    Ok((s.f32(&tail, c.data)?, s.info(info)?))
}

/// torch's `ormqr` flags as qr-core's operation.
fn apply_q(left: bool, transpose: bool) -> ApplyQ {
    ApplyQ {
        side: if left { Side::Left } else { Side::Right },
        transpose: if transpose {
            Transpose::Yes
        } else {
            Transpose::No
        },
    }
}

/// The `k` of `C` (shape `dims`) that `op(Q)` of `s`'s reflectors applies
/// to: `C` is `(..., n, k)` from the left, `(..., k, n)` from the right.
fn c_cols(s: &Square, dims: &[usize], left: bool) -> PyResult<usize> {
    let r = dims.len();
    let ok_batch = r == s.batch_dims.len() + 2 && dims[..r - 2] == s.batch_dims[..];
    let k = match (ok_batch, left) {
        (true, true) if dims[r - 2] == s.n => Some(dims[r - 1]),
        (true, false) if dims[r - 1] == s.n => Some(dims[r - 2]),
        _ => None,
    };
    k.ok_or_else(|| {
        let want = if left { "(n, k)" } else { "(k, n)" };
        PyValueError::new_err(format!(
            "C: with left={}, expected shape {}+{want} with n = {} to match H of shape {}, \
             got shape {}",
            if left { "True" } else { "False" },
            tuple(&s.batch_dims),
            s.n,
            tuple(&s.dims(&[s.n, s.n])),
            tuple(dims)
        ))
    })
}

/// `qr(a) -> (q, r, info)`.
#[pyfunction]
fn qr(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<(Array, Array, Array)> {
    let a = import_f32(a, "A")?;
    let s = Square::of(&a, "A")?;
    let f = py
        .detach(|| qr_core::qr(cpu(), s.shape, &a.data))
        .map_err(to_py_err)?;
    Ok((
        s.f32(&[s.n, s.n], f.q)?,
        s.f32(&[s.n, s.n], f.r)?,
        s.info(f.info)?,
    ))
}

/// The backend that CPU tensors run on, as one line.
#[pyfunction]
fn describe_cpu() -> String {
    cpu().describe()
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Array>()?;
    m.add_function(wrap_pyfunction!(geqrf, m)?)?;
    m.add_function(wrap_pyfunction!(orgqr, m)?)?;
    m.add_function(wrap_pyfunction!(ormqr, m)?)?;
    m.add_function(wrap_pyfunction!(qr, m)?)?;
    m.add_function(wrap_pyfunction!(describe_cpu, m)?)?;
    m.add_function(wrap_pyfunction!(cuda::describe_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(cuda::geqrf_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(cuda::orgqr_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(cuda::ormqr_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(cuda::qr_cuda, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_print_as_python_tuples() {
        assert_eq!(tuple(&[3]), "(3,)");
        assert_eq!(tuple(&[]), "()");
        assert_eq!(tuple(&[2, 4, 4]), "(2, 4, 4)");
    }
}
