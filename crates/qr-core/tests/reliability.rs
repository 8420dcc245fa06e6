//! Bad input at the qr-core surface: every size and length error is caught
//! before a backend runs or memory is reserved (docs/RELIABILITY.md, rows
//! "sizes", "lengths", "empty").

use qr_core::{Backend, BatchMut, BatchRef, Factorization, Info, QrError, Shape, geqrf};

/// A backend that must never be reached: the checks under test come first.
struct Unreachable;

impl Backend for Unreachable {
    fn name(&self) -> &str {
        "unreachable"
    }

    fn geqrf_into(&self, a: BatchRef<'_>, _out: BatchMut<'_>) -> Result<(), QrError> {
        panic!("backend called with {}", a.shape());
    }
}

/// A backend that records the shape it was given and writes nothing.
struct Records(std::sync::Mutex<Vec<Shape>>);

impl Backend for Records {
    fn name(&self) -> &str {
        "records"
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        assert_eq!(a.shape(), out.shape());
        self.0.lock().unwrap().push(a.shape());
        Ok(())
    }
}

#[test]
fn byte_counts_that_overflow_are_size_errors() {
    let limit = isize::MAX as usize;
    let cases = [
        (usize::MAX, 1),
        (1, usize::MAX),
        (2, 1 << 31),
        (1, 1 << 31),
        // Exactly one element past isize::MAX bytes.
        (limit / 4 + 1, 1),
        // n = 0 still needs `batch` info entries.
        (usize::MAX, 0),
        (1 << 62, 0),
        // n * n alone overflows even with no matrices.
        (0, 1 << 32),
    ];
    for (batch, n) in cases {
        assert_eq!(
            Shape::new(batch, n),
            Err(QrError::SizeOverflow { batch, n }),
            "{batch} x {n}"
        );
    }
    assert!(Shape::new(limit / 4, 1).is_ok());
    assert!(Shape::new(limit / 4, 0).is_ok());
    assert!(Shape::new(0, (1 << 32) - 1).is_ok());
}

#[test]
fn unreservable_sizes_are_out_of_memory_not_an_abort() {
    // 2^50 bytes: beyond any host's memory, but a valid shape.
    let shape = Shape::new(1 << 20, 1 << 14).unwrap();
    match Factorization::zeroed(shape) {
        Err(QrError::OutOfMemory { bytes, location }) => {
            assert_eq!(location, "host");
            assert_eq!(bytes, shape.a_bytes());
        }
        other => panic!("expected OutOfMemory, got {:?}", other.map(|f| f.shape)),
    }
    let empty_but_huge_info = Shape::new(isize::MAX as usize / 4, 0).unwrap();
    assert!(matches!(
        Factorization::zeroed(empty_but_huge_info),
        Err(QrError::OutOfMemory { .. })
    ));
}

#[test]
fn lengths_that_do_not_match_the_shape_are_errors_before_the_backend() {
    let shape = Shape::new(3, 4).unwrap();
    for len in [0, 47, 49, 16, 96] {
        let a = vec![1.0f32; len];
        assert_eq!(
            geqrf(&Unreachable, shape, &a).map(|f| f.shape),
            Err(QrError::LengthMismatch {
                what: "a",
                expected: 48,
                actual: len
            })
        );
    }
    let (mut h, mut tau, mut info) = (vec![0.0; 48], vec![0.0; 12], vec![Info::OK; 3]);
    assert!(matches!(
        BatchMut::new(shape, &mut h[..47], &mut tau, &mut info),
        Err(QrError::LengthMismatch { what: "h", .. })
    ));
    assert!(matches!(
        BatchMut::new(shape, &mut h, &mut tau[..11], &mut info),
        Err(QrError::LengthMismatch { what: "tau", .. })
    ));
    assert!(matches!(
        BatchMut::new(shape, &mut h, &mut tau, &mut info[..2]),
        Err(QrError::LengthMismatch { what: "info", .. })
    ));
}

#[test]
fn empty_batches_reach_the_backend_with_empty_buffers() {
    let backend = Records(Default::default());
    for (batch, n) in [(0, 0), (0, 5), (7, 0)] {
        let shape = Shape::new(batch, n).unwrap();
        let f = geqrf(&backend, shape, &[]).unwrap();
        assert!(f.h.is_empty() && f.tau.is_empty());
        assert_eq!(f.info, vec![Info::OK; batch]);
    }
    assert_eq!(backend.0.lock().unwrap().len(), 3);
}

#[test]
fn every_info_code_explains_itself() {
    assert!(Info::OK.is_ok());
    assert!(!Info::NON_FINITE.is_ok());
    assert_ne!(Info::NON_FINITE.describe(), Info::OK.describe());
    assert_eq!(Info(-7).describe(), "unknown status code");
    assert!(Info::NON_FINITE.to_string().starts_with("1 ("));
    assert!(!Info::OVERFLOW.is_ok());
    assert_eq!(Info::OVERFLOW, Info(2));
    assert!(Info::OVERFLOW.describe().contains("does not fit f32"));
    assert!(Info::OVERFLOW.to_string().starts_with("2 ("));
}

#[test]
fn errors_display_their_detail() {
    let e = QrError::LengthMismatch {
        what: "tau",
        expected: 12,
        actual: 11,
    };
    let text = e.to_string();
    assert!(text.contains("tau") && text.contains("12") && text.contains("11"));
    let e = QrError::Backend {
        backend: "gpu".into(),
        message: "line 1\nline 2".into(),
    };
    assert!(e.to_string().contains("line 1\nline 2"));
}
