//! Tensors in: a Python object with `__dlpack__` becomes an owned,
//! contiguous row-major `Vec<f32>` and its shape, or a Python error that
//! says what is wrong with it.
//!
//! Every input is copied while the GIL is held. The copy is a pass over
//! `batch * n * n` floats against `O(n^3)` work per matrix, and it is what
//! makes releasing the GIL sound: no Rust reference to memory that Python
//! code could write or free exists while another thread runs.

use std::borrow::Cow;

use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType};
use dlpark::python::{ImportRequest, ImportedDlpack};
use dlpark::tensor::TensorRef;
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyTypeError};
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

/// A CPU `f32` tensor copied out of its producer.
#[derive(Debug)]
pub struct Input {
    /// Its shape, outermost first.
    pub shape: Vec<usize>,
    /// Its elements, contiguous and row-major.
    pub data: Vec<f32>,
}

/// Imports `obj` (argument `name` of the call) through DLPack and copies it.
///
/// Errors: `TypeError` for an object without DLPack support or a dtype other
/// than float32; `ValueError` for a tensor on any device but the CPU (the
/// Python layer sends CUDA tensors to the CUDA path).
pub fn import_f32(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Input> {
    if !obj.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "{name}: expected a tensor that supports DLPack (`__dlpack__`: a torch \
             tensor or a numpy array), got {}",
            type_name(obj)
        )));
    }
    let request = ImportRequest::new(obj.as_borrowed())?;
    // The device is asked before the producer exports anything, so that a
    // CUDA tensor is refused without synchronizing its stream.
    if let Ok(device) = request.device() {
        check_device(device, name)?;
    }
    let imported = request.import(None, None)?;
    let tensor = imported
        .validate()
        .map_err(|e| PyBufferError::new_err(format!("{name}: invalid DLPack tensor: {e}")))?;
    check_device(tensor.device(), name)?;
    check_dtype(tensor.dtype(), name)?;
    let shape = tensor
        .shape()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| PyValueError::new_err(format!("{name}: negative dimension")))?;
    let data = copy_elements(&imported, &tensor, name)?;
    Ok(Input { shape, data })
}

/// Copies the elements of a validated CPU `f32` tensor into a contiguous
/// row-major vector, following its strides (any sign, zero included).
fn copy_elements(_owner: &ImportedDlpack, t: &TensorRef<'_>, name: &str) -> PyResult<Vec<f32>> {
    let count = t.num_elements();
    let mut out = Vec::new();
    out.try_reserve_exact(count).map_err(|_| {
        PyMemoryError::new_err(format!("{name}: cannot allocate a copy of {count} floats"))
    })?;
    if count == 0 {
        return Ok(out);
    }
    let bad = |e: dlpark::tensor::Error| PyBufferError::new_err(format!("{name}: {e}"));
    if t.is_compact().map_err(bad)? {
        // SAFETY: `_owner` keeps the producer's managed tensor alive for this
        // borrow, the GIL is held (no Python code runs meanwhile), and a
        // compact CPU tensor's DLPack contract is `num_elements` readable
        // values from the offset data pointer.
        let src = unsafe { t.cpu_slice::<f32>() }.map_err(bad)?;
        out.extend_from_slice(src);
        return Ok(out);
    }
    let strides = t.strides_or_compact().map_err(bad)?;
    let offsets = element_offsets(t.shape(), &strides)
        .ok_or_else(|| PyOverflowError::new_err(format!("{name}: strides overflow")))?;
    // SAFETY: as above, the tensor is alive and the GIL held. DLPack's
    // contract for a strided tensor is that `base + sum(i_d * stride_d)` is
    // a readable, aligned element for every index within the shape (checked
    // for alignment by `offset_data_ptr`); `element_offsets` yields exactly
    // those sums, in row-major order.
    unsafe {
        let base = t.offset_data_ptr::<f32>().map_err(bad)?;
        out.extend(offsets.map(|off| *base.offset(off)));
    }
    Ok(out)
}

/// The element offsets `sum(i_d * stride_d)` of every index of `shape`, in
/// row-major order; `None` when a product overflows `isize`.
fn element_offsets(shape: &[i64], strides: &[i64]) -> Option<impl Iterator<Item = isize>> {
    let dims: Vec<(isize, isize)> = shape
        .iter()
        .zip(strides)
        .map(|(&d, &s)| {
            let d = isize::try_from(d).ok()?;
            let s = isize::try_from(s).ok()?;
            // The largest offset reached along this axis must fit.
            s.checked_mul(d.max(1) - 1)?;
            Some((d, s))
        })
        .collect::<Option<_>>()?;
    // Bounds of the sum over all axes, in i128 so their check cannot wrap.
    let (lo, hi) = dims.iter().fold((0i128, 0i128), |(lo, hi), &(d, s)| {
        let reach = s as i128 * (d.max(1) - 1) as i128;
        (lo + reach.min(0), hi + reach.max(0))
    });
    if lo < isize::MIN as i128 || hi > isize::MAX as i128 {
        return None;
    }
    let total: usize = dims.iter().map(|&(d, _)| d as usize).product();
    let mut index = vec![0isize; dims.len()];
    let mut offset = 0isize;
    Some((0..total).map(move |k| {
        if k > 0 {
            // Odometer step: the last axis fastest.
            for axis in (0..dims.len()).rev() {
                let (d, s) = dims[axis];
                // Wrapping: one step past an axis's end may leave isize
                // before the reset; every offset returned is in range.
                index[axis] += 1;
                offset = offset.wrapping_add(s);
                if index[axis] < d {
                    break;
                }
                offset = offset.wrapping_sub(s.wrapping_mul(d));
                index[axis] = 0;
            }
        }
        offset
    }))
}

fn check_device(device: DLDevice, name: &str) -> PyResult<()> {
    match device.device_type {
        DLDeviceType::CPU => Ok(()),
        DLDeviceType::CUDA | DLDeviceType::CUDAMANAGED => Err(PyValueError::new_err(format!(
            "{name}: a tensor on CUDA device {} reached the CPU path: every tensor of a \
             call must be on one device (the `qr_rs` functions run CUDA tensors on their GPU)",
            device.device_id
        ))),
        other => Err(PyValueError::new_err(format!(
            "{name}: tensors on DLPack device type {} (device {}) are not supported: only \
             CPU tensors are",
            other.0, device.device_id
        ))),
    }
}

fn check_dtype(dtype: DLDataType, name: &str) -> PyResult<()> {
    if dtype.is::<f32>() {
        return Ok(());
    }
    Err(PyTypeError::new_err(format!(
        "{name}: dtype {} is not supported: qr_rs factors float32 tensors only \
         (convert with `.float()` in torch or `.astype(numpy.float32)` in numpy)",
        dtype_name(dtype)
    )))
}

/// numpy/torch's name of a DLPack dtype (`float64`, `bfloat16`, `int32`...).
pub fn dtype_name(dtype: DLDataType) -> Cow<'static, str> {
    let kind = match dtype.code {
        DLDataTypeCode::INT => "int",
        DLDataTypeCode::UINT => "uint",
        DLDataTypeCode::FLOAT => "float",
        DLDataTypeCode::BFLOAT => "bfloat",
        DLDataTypeCode::COMPLEX => "complex",
        DLDataTypeCode::BOOL => return Cow::Borrowed("bool"),
        other => {
            return Cow::Owned(format!(
                "(DLPack type code {}, {} bits)",
                other.0, dtype.bits
            ));
        }
    };
    if dtype.lanes == 1 {
        Cow::Owned(format!("{kind}{}", dtype.bits))
    } else {
        Cow::Owned(format!("{kind}{}x{}", dtype.bits, dtype.lanes))
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an object of unknown type".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_strides_in_row_major_order() {
        let all = |shape: &[i64], strides: &[i64]| -> Vec<isize> {
            element_offsets(shape, strides).unwrap().collect()
        };
        assert_eq!(all(&[2, 3], &[3, 1]), [0, 1, 2, 3, 4, 5]);
        // A transposed 3 x 2 matrix.
        assert_eq!(all(&[2, 3], &[1, 2]), [0, 2, 4, 1, 3, 5]);
        // Reversed rows (numpy's a[::-1]) and a broadcast axis.
        assert_eq!(all(&[2, 2], &[-2, 1]), [0, 1, -2, -1]);
        assert_eq!(all(&[2, 2, 2], &[0, 2, 1]), [0, 1, 2, 3, 0, 1, 2, 3]);
        assert!(all(&[0, 3], &[3, 1]).is_empty());
        assert!(element_offsets(&[3, 3], &[i64::MAX / 2, 1]).is_none());
    }

    #[test]
    fn dtype_names_match_numpy_and_torch() {
        let f = |code, bits| DLDataType {
            code,
            bits,
            lanes: 1,
        };
        assert_eq!(dtype_name(f(DLDataTypeCode::FLOAT, 64)), "float64");
        assert_eq!(dtype_name(f(DLDataTypeCode::BFLOAT, 16)), "bfloat16");
        assert_eq!(dtype_name(f(DLDataTypeCode::INT, 32)), "int32");
        assert_eq!(dtype_name(f(DLDataTypeCode::COMPLEX, 64)), "complex64");
        assert_eq!(dtype_name(f(DLDataTypeCode::BOOL, 8)), "bool");
    }
}
