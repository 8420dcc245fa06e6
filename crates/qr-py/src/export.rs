//! Tensors out: a result buffer wrapped in a one-shot DLPack producer, so
//! that `torch.from_dlpack`, `numpy.from_dlpack` (or any other framework's)
//! turns it into a tensor of that framework without a copy.

use std::ffi::c_void;
use std::sync::Mutex;

use dlpark::ffi::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned};
use dlpark::metadata::Dynamic;
use dlpark::python::{DlpackExporter, ExportRequest, export_dlpack};
use dlpark::{DlpackFlags, Managed, ManagedTensorBase};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;

/// The elements of a result.
#[derive(Debug)]
pub enum Buffer {
    /// `H`, `tau`, `Q`, `R`, `C`.
    F32(Vec<f32>),
    /// The per-matrix info codes.
    I32(Vec<i32>),
}

/// A result of a `qr_rs` call: a CPU array with `__dlpack__`, handed to a
/// framework's `from_dlpack` once. The framework then owns the memory (and
/// may write to it); exporting it a second time is a `BufferError`.
#[pyclass(frozen, module = "qr_rs._native")]
#[derive(Debug)]
pub struct Array {
    shape: Vec<i64>,
    buffer: Mutex<Option<Buffer>>,
}

impl Array {
    /// Wraps `buffer` with `shape` (whose product must be its length).
    pub fn new(shape: &[usize], buffer: Buffer) -> PyResult<Self> {
        let shape = shape
            .iter()
            .map(|&d| i64::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| PyValueError::new_err("a dimension does not fit in i64"))?;
        Ok(Self {
            shape,
            buffer: Mutex::new(Some(buffer)),
        })
    }

    /// Moves the buffer into a fresh managed tensor of ABI `M`.
    fn export<M: ManagedTensorBase>(&self) -> PyResult<Managed<M>> {
        let buffer = self
            .buffer
            .lock()
            .map_err(|_| PyBufferError::new_err("qr_rs result: lock poisoned"))?
            .take()
            .ok_or_else(|| {
                PyBufferError::new_err("qr_rs result: already handed to a framework once")
            })?;
        let metadata = Dynamic::compact(self.shape.clone());
        let bad = |e: dlpark::metadata::Error| PyBufferError::new_err(e.to_string());
        // The Vec moves into a Box that the managed tensor owns (its deleter
        // drops it); its heap data does not move, so the pointer taken
        // before stays valid for as long as the consumer holds the tensor.
        let (mut init, dtype) = match buffer {
            Buffer::F32(mut v) => {
                let ptr = v.as_mut_ptr() as *mut c_void;
                let mut init = metadata.initialize_as::<M>(Box::new(v)).map_err(bad)?;
                init.set_data(ptr);
                (init, DLDataType::of::<f32>())
            }
            Buffer::I32(mut v) => {
                let ptr = v.as_mut_ptr() as *mut c_void;
                let mut init = metadata.initialize_as::<M>(Box::new(v)).map_err(bad)?;
                init.set_data(ptr);
                (init, DLDataType::of::<i32>())
            }
        };
        init.set_device(DLDevice::CPU).set_dtype(dtype);
        // SAFETY: the data pointer addresses the boxed Vec's elements, owned
        // by this managed tensor's context until its deleter runs; shape and
        // compact strides were written by dlpark's metadata builder for the
        // Vec's length; the flags are empty (writable, not copied), which is
        // true: nothing else refers to the buffer once it is taken.
        Ok(unsafe { init.finish() })
    }
}

impl DlpackExporter for Array {
    fn device(&self) -> DLDevice {
        DLDevice::CPU
    }

    fn flags(&self) -> DlpackFlags {
        DlpackFlags::empty()
    }

    fn prepare_export(&self, _py: Python<'_>, _request: &ExportRequest<'_>) -> PyResult<()> {
        // Host memory, written before the call returned: nothing to order.
        Ok(())
    }

    fn export_legacy(&self, _py: Python<'_>) -> PyResult<Managed<DLManagedTensor>> {
        self.export()
    }

    fn export_versioned(&self, _py: Python<'_>) -> PyResult<Managed<DLManagedTensorVersioned>> {
        self.export()
    }
}

#[pymethods]
impl Array {
    /// The array's shape.
    #[getter]
    fn shape(&self) -> Vec<i64> {
        self.shape.clone()
    }

    /// DLPack export (Python array API): the buffer moves to the caller.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(u32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let request = ExportRequest::parse(stream, max_version, dl_device, copy)?;
        export_dlpack(self, py, request)
    }

    /// `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (u32, i32) {
        (DLDevice::CPU.device_type.0, DLDevice::CPU.device_id)
    }
}
