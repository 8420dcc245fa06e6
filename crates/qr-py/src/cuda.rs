//! CUDA tensors: zero copy, on the caller's stream.
//!
//! The Python layer allocates every result with the input's framework
//! (torch or CuPy) on the input's device and passes inputs, results and
//! its current stream here, on which every tensor is ready. Each tensor is
//! imported through DLPack without a stream handshake (torch's C exchange
//! API where it matches the stream, else `__dlpack__(stream=-1)`) and
//! checked (device, dtype, shape, contiguity, alignment); the operation is
//! queued by the device's engine ordered after the stream's earlier work
//! and before its later work. Nothing waits on the host: a call returns as
//! soon as the work is queued.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use dlpark::ffi::{DLDataType, DLDevice, DLDeviceType};
use dlpark::python::consumer::stream;
use dlpark::python::{DlpackStream, ImportRequest, ImportedDlpack, StreamArg};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use qr_core::QrError;
use qr_gpu::{ExternalStream, GpuBackend, RawBuffer, RawFactors};

use crate::import::dtype_name;
use crate::{Square, to_py_err, tuple};

/// The engine of each CUDA device used so far, created on first use: its
/// kernels are compiled once per process (and kept in the PTX cache across
/// processes), and its queueing lock orders concurrent callers.
fn gpu(device: i32) -> PyResult<Arc<GpuBackend>> {
    static GPUS: OnceLock<Mutex<HashMap<i32, Arc<GpuBackend>>>> = OnceLock::new();
    let mut gpus = GPUS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| PyRuntimeError::new_err("qr_rs: the engine table's lock is poisoned"))?;
    if let Some(g) = gpus.get(&device) {
        return Ok(g.clone());
    }
    let ordinal = usize::try_from(device)
        .map_err(|_| PyValueError::new_err(format!("CUDA device {device} does not exist")))?;
    let g = GpuBackend::new(ordinal).map_err(|e| {
        PyRuntimeError::new_err(format!("qr_rs cannot use CUDA device {device}: {e}"))
    })?;
    let g = Arc::new(g);
    gpus.insert(device, g.clone());
    Ok(g)
}

/// One line naming the engine of CUDA device `device` (created if needed).
#[pyfunction]
pub fn describe_cuda(device: i32) -> PyResult<String> {
    Ok(format!(
        "qr-rs CUDA engine on device {device}: {}",
        gpu(device)?.device()
    ))
}

/// The caller's stream as DLPack's consumer stream: by the contract of the
/// `*_cuda` functions it is the producer's current stream of the device,
/// on which the tensors are ready.
struct Consumer(usize);

/// A raw stream handle with CUDA's legacy default stream as one value (0
/// and its DLPack sentinel 1 name the same stream).
fn legacy_as_one(handle: usize) -> usize {
    if handle == 0 { 1 } else { handle }
}

// SAFETY: the handle is the caller's current stream of the tensor's
// device, passed in from Python by the same call, alive during it.
unsafe impl DlpackStream for Consumer {
    /// The Python protocol (CuPy, or torch without the C exchange API):
    /// the caller's stream is the producer's current stream, on which the
    /// tensor is ready, so the producer is asked for no synchronization
    /// (DLPack's -1). Handing it the stream itself would cost torch an
    /// external-stream wrapper, an event and a wait per tensor.
    fn as_python_arg(&self, _py: Python<'_>, _device: DLDevice) -> PyResult<StreamArg> {
        Ok(stream::no_sync())
    }

    /// The C exchange path (torch): the tensor is ready on the producer's
    /// work stream; when that is the caller's stream no `__dlpack__` call
    /// is needed. Another stream declines, and the Python protocol above
    /// follows.
    unsafe fn wait_for_producer(&self, _device: DLDevice, producer: *mut c_void) -> PyResult<bool> {
        Ok(legacy_as_one(producer as usize) == legacy_as_one(self.0))
    }
}

/// A checked CUDA tensor: its device, shape and address (its DLPack owner
/// is held by the [`Call`] until the work is queued).
struct Tensor {
    device: i32,
    shape: Vec<usize>,
    ptr: u64,
}

impl Tensor {
    fn buffer<T>(&self, name: &str) -> PyResult<RawBuffer<T>> {
        let len = self.shape.iter().product();
        // SAFETY: the address is a compact tensor of `len` elements of the
        // checked dtype on the checked device, whose owner the call holds
        // until its work is queued; its framework allocated it in stream order on the
        // stream that the call orders its work with, so it is not reused
        // before that work.
        unsafe { RawBuffer::new(self.ptr, len, name) }.map_err(|e| match e {
            QrError::Unsupported { message } => PyValueError::new_err(message),
            e => to_py_err(e),
        })
    }
}

fn import(
    obj: &Bound<'_, PyAny>,
    name: &str,
    stream: usize,
    want: (DLDataType, &str),
) -> PyResult<(Tensor, ImportedDlpack)> {
    let request = ImportRequest::new(obj.as_borrowed())?;
    let imported = request.import(Some(&Consumer(stream)), None)?;
    let t = imported
        .validate()
        .map_err(|e| PyBufferError::new_err(format!("{name}: invalid DLPack tensor: {e}")))?;
    let device = t.device();
    if !matches!(
        device.device_type,
        DLDeviceType::CUDA | DLDeviceType::CUDAMANAGED
    ) {
        return Err(PyValueError::new_err(format!(
            "{name}: expected a CUDA tensor, got one on DLPack device type {}",
            device.device_type.0
        )));
    }
    if t.dtype() != want.0 {
        return Err(PyTypeError::new_err(format!(
            "{name}: dtype {} is not supported: expected {}",
            dtype_name(t.dtype()),
            want.1
        )));
    }
    let bad = |e: dlpark::tensor::Error| PyBufferError::new_err(format!("{name}: {e}"));
    if !t.is_compact().map_err(bad)? {
        return Err(PyValueError::new_err(format!(
            "{name}: a CUDA tensor must be contiguous here (the Python layer copies others)"
        )));
    }
    let shape = t
        .shape()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| PyValueError::new_err(format!("{name}: negative dimension")))?;
    let ptr = (t.data_ptr() as u64)
        .checked_add(t.byte_offset())
        .ok_or_else(|| PyValueError::new_err(format!("{name}: its address overflows")))?;
    let device = device.device_id;
    Ok((Tensor { device, shape, ptr }, imported))
}

const F32: (DLDataType, &str) = (
    DLDataType {
        code: dlpark::ffi::DLDataTypeCode::FLOAT,
        bits: 32,
        lanes: 1,
    },
    "float32",
);
const I32: (DLDataType, &str) = (
    DLDataType {
        code: dlpark::ffi::DLDataTypeCode::INT,
        bits: 32,
        lanes: 1,
    },
    "int32",
);

/// The tensors of one call, on one device, their DLPack owners held until
/// the call is dropped (after its work is queued).
struct Call {
    device: i32,
    stream: usize,
    first: &'static str,
    owners: Vec<ImportedDlpack>,
}

impl Call {
    fn new(stream: usize) -> Self {
        Self {
            device: -1,
            stream,
            first: "",
            owners: Vec::new(),
        }
    }

    fn take(
        &mut self,
        obj: &Bound<'_, PyAny>,
        name: &'static str,
        want: (DLDataType, &str),
    ) -> PyResult<Tensor> {
        let (t, owner) = import(obj, name, self.stream, want)?;
        self.owners.push(owner);
        if self.first.is_empty() {
            (self.device, self.first) = (t.device, name);
        } else if t.device != self.device {
            return Err(PyValueError::new_err(format!(
                "{name} is on CUDA device {} while {} is on CUDA device {}: every tensor of \
                 a call must be on one device",
                t.device, self.first, self.device
            )));
        }
        Ok(t)
    }

    /// Takes a result tensor, which must have shape `dims`.
    fn output<T>(
        &mut self,
        obj: &Bound<'_, PyAny>,
        name: &'static str,
        want: (DLDataType, &str),
        dims: &[usize],
    ) -> PyResult<RawBuffer<T>> {
        let t = self.take(obj, name, want)?;
        if t.shape != dims {
            return Err(PyValueError::new_err(format!(
                "{name}: expected shape {}, got {}",
                tuple(dims),
                tuple(&t.shape)
            )));
        }
        t.buffer(name)
    }

    /// Takes the input batch `(..., n, n)`.
    fn square(&mut self, a: &Bound<'_, PyAny>) -> PyResult<(Square, RawBuffer<f32>)> {
        let at = self.take(a, "A", F32)?;
        let s = Square::of_dims(&at.shape, "A")?;
        Ok((s, at.buffer("A")?))
    }

    /// Takes geqrf's results for `s`.
    fn factors(
        &mut self,
        s: &Square,
        (h, tau, info): (&Bound<'_, PyAny>, &Bound<'_, PyAny>, &Bound<'_, PyAny>),
    ) -> PyResult<RawFactors> {
        Ok(RawFactors {
            h: self.output(h, "H", F32, &s.dims(&[s.n, s.n]))?,
            tau: self.output(tau, "tau", F32, &s.dims(&[s.n]))?,
            info: self.output(info, "info", I32, &s.dims(&[]))?,
        })
    }

    fn run(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&GpuBackend, ExternalStream) -> Result<(), QrError> + Send,
    ) -> PyResult<()> {
        let g = gpu(self.device)?;
        // SAFETY: the handle is the caller's current stream of `device`.
        let stream = unsafe { ExternalStream::from_raw(self.stream) };
        py.detach(|| f(&g, stream)).map_err(to_py_err)
    }
}

/// `geqrf` of the CUDA tensor `a` into `h`, `tau` and `info`, on `stream`.
#[pyfunction]
pub fn geqrf_cuda(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    h: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
    info: &Bound<'_, PyAny>,
    stream: usize,
) -> PyResult<()> {
    let mut call = Call::new(stream);
    let (s, a) = call.square(a)?;
    let out = call.factors(&s, (h, tau, info))?;
    call.run(py, |g, st| g.geqrf_raw(st, s.shape, a, out))
}

/// `orgqr` of the CUDA reflectors `(h, tau)` (tau padded to `n`) into `q`
/// and `info`, on `stream`.
#[pyfunction]
pub fn orgqr_cuda(
    py: Python<'_>,
    h: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
    q: &Bound<'_, PyAny>,
    info: &Bound<'_, PyAny>,
    stream: usize,
) -> PyResult<()> {
    let mut call = Call::new(stream);
    let (s, h, tau) = reflectors(&mut call, h, tau)?;
    let q = call.output(q, "Q", F32, &s.dims(&[s.n, s.n]))?;
    let info = call.output(info, "info", I32, &s.dims(&[]))?;
    call.run(py, |g, st| g.orgqr_raw(st, s.shape, (h, tau), q, info))
}

/// `ormqr` of the CUDA reflectors `(h, tau)` applied in place to `c`, on
/// `stream`.
#[pyfunction]
#[pyo3(signature = (h, tau, c, info, left, transpose, stream))]
#[allow(clippy::too_many_arguments)]
pub fn ormqr_cuda(
    py: Python<'_>,
    h: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
    info: &Bound<'_, PyAny>,
    left: bool,
    transpose: bool,
    stream: usize,
) -> PyResult<()> {
    let mut call = Call::new(stream);
    let (s, h, tau) = reflectors(&mut call, h, tau)?;
    let ct = call.take(c, "C", F32)?;
    let k = crate::c_cols(&s, &ct.shape, left)?;
    let c = ct.buffer("C")?;
    let info = call.output(info, "info", I32, &s.dims(&[]))?;
    let op = crate::apply_q(left, transpose);
    call.run(py, |g, st| {
        g.ormqr_raw(st, s.shape, (h, tau), (op, k), c, info)
    })
}

/// `qr` of the CUDA tensor `a`: `h`, `tau` scratch, `q`, `r` and `info`
/// results, on `stream`.
#[pyfunction]
#[pyo3(signature = (a, h, tau, info, q, r, stream))]
#[allow(clippy::too_many_arguments)]
pub fn qr_cuda(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    h: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
    info: &Bound<'_, PyAny>,
    q: &Bound<'_, PyAny>,
    r: &Bound<'_, PyAny>,
    stream: usize,
) -> PyResult<()> {
    let mut call = Call::new(stream);
    let (s, a) = call.square(a)?;
    let f = call.factors(&s, (h, tau, info))?;
    let square = s.dims(&[s.n, s.n]);
    let q = call.output(q, "Q", F32, &square)?;
    let r = call.output(r, "R", F32, &square)?;
    call.run(py, |g, st| g.qr_raw(st, s.shape, a, f, (q, r)))
}

/// Takes `(h, tau)` of a Q operation: `tau` must hold `n` per matrix (the
/// Python layer pads a shorter one).
fn reflectors(
    call: &mut Call,
    h: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
) -> PyResult<(Square, RawBuffer<f32>, RawBuffer<f32>)> {
    let ht = call.take(h, "H", F32)?;
    let s = Square::of_dims(&ht.shape, "H")?;
    let h = ht.buffer("H")?;
    let tau = call.output(tau, "tau", F32, &s.dims(&[s.n]))?;
    Ok((s, h, tau))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wanted_dtypes_are_float32_and_int32() {
        assert!(F32.0.is::<f32>());
        assert!(I32.0.is::<i32>());
    }

    #[test]
    fn the_legacy_default_stream_has_one_name() {
        let c = Consumer(0);
        // SAFETY: only compares handles.
        unsafe {
            assert!(
                c.wait_for_producer(DLDevice::cuda(0), std::ptr::without_provenance_mut(1))
                    .unwrap()
            );
            assert!(
                c.wait_for_producer(DLDevice::cuda(0), std::ptr::null_mut())
                    .unwrap()
            );
            assert!(
                !c.wait_for_producer(DLDevice::cuda(0), std::ptr::without_provenance_mut(0x1000))
                    .unwrap()
            );
        }
    }

    #[test]
    fn a_device_that_cannot_exist_is_an_error() {
        assert!(gpu(-1).is_err());
    }
}
