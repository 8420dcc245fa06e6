//! The device: its description ([`probe`]), what a kernel launcher takes
//! ([`launch`]: the context and the compiled modules) and reusable device
//! buffers ([`workspace`]).

pub(crate) mod launch;
pub(crate) mod probe;
pub(crate) mod workspace;
