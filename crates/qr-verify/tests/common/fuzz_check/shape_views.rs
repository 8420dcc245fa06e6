//! Checks for qr-core's shapes and batch views on arbitrary sizes and
//! buffer lengths: no panic, no overflow, and every error is the one the
//! documentation names.

use qr_core::{BatchMut, BatchRef, Factorization, Info, QrError, Shape};

use super::decode::Reader;

/// Buffers are only built for shapes this small; larger valid shapes are
/// checked through their arithmetic alone (and through allocation, below).
const MAX_BUILT_ELEMS: usize = 1 << 14;

/// Byte counts at or above this cannot be reserved on any 64-bit host
/// (beyond a 4-level page table's 128 TiB of user addresses), so
/// [`Factorization::zeroed`] must report them as out of memory rather than
/// abort. Sizes between the built ones and this are not allocated: they
/// might succeed and really use the memory.
const UNRESERVABLE_BYTES: u128 = 1 << 47;

/// Decodes one input and checks it; panics on a contract violation.
pub fn check(data: &[u8]) {
    let mut r = Reader::new(data);
    let batch = r.size();
    let n = r.size();
    check_shape(batch, n);
    if let Ok(shape) = Shape::new(batch, n) {
        check_allocation(shape);
        if shape.a_len() <= MAX_BUILT_ELEMS && shape.info_len() <= MAX_BUILT_ELEMS {
            check_views(shape, &mut r);
        }
    }
}

/// `Shape::new` accepts exactly the sizes whose every buffer fits in `isize`
/// bytes, and its lengths are the exact products.
fn check_shape(batch: usize, n: usize) {
    let (b, m) = (batch as u128, n as u128);
    let limit = isize::MAX as u128;
    // `matrix_len()` (n * n elements) must be representable even for an
    // empty batch; every buffer's bytes must fit `isize`. u128 holds m * m
    // but not b * m * m, hence the checked steps.
    let a_bytes = (m * m).checked_mul(b).and_then(|p| p.checked_mul(4));
    let fits = m * m <= usize::MAX as u128 && a_bytes.is_some_and(|p| p <= limit) && b * 4 <= limit;
    match Shape::new(batch, n) {
        Ok(s) => {
            assert!(
                fits,
                "Shape::new({batch}, {n}) accepted sizes whose bytes overflow isize"
            );
            assert_eq!((s.batch(), s.n()), (batch, n));
            assert_eq!(s.a_len() as u128, b * m * m);
            assert_eq!(s.tau_len() as u128, b * m);
            assert_eq!(s.info_len(), batch);
            assert_eq!(s.matrix_len() as u128, m * m);
            assert_eq!(s.a_bytes() as u128, b * m * m * 4);
            assert_eq!(s.is_empty(), batch == 0 || n == 0);
            assert_eq!(s.to_string(), format!("{batch}x{n}x{n}"));
            assert_eq!(s.with_batch(batch), Ok(s));
        }
        Err(e) => {
            assert!(
                !fits,
                "Shape::new({batch}, {n}) rejected a valid shape: {e}"
            );
            assert_eq!(e, QrError::SizeOverflow { batch, n });
            assert!(!e.to_string().is_empty());
        }
    }
}

/// Allocation is fallible: small shapes allocate zeroed outputs, shapes no
/// host can hold are an `OutOfMemory` error, never an abort.
fn check_allocation(shape: Shape) {
    let bytes =
        shape.a_bytes() as u128 + shape.tau_len() as u128 * 4 + shape.info_len() as u128 * 4;
    if bytes <= (MAX_BUILT_ELEMS as u128) * 16 {
        let f = Factorization::zeroed(shape).expect("small outputs allocate");
        assert_eq!(f.h.len(), shape.a_len());
        assert_eq!(f.tau.len(), shape.tau_len());
        assert_eq!(f.info.len(), shape.info_len());
        assert!(f.all_ok());
    } else if shape.a_bytes() as u128 >= UNRESERVABLE_BYTES
        || shape.info_len() as u128 * 4 >= UNRESERVABLE_BYTES
    {
        match Factorization::zeroed(shape) {
            Err(QrError::OutOfMemory { location, .. }) => assert_eq!(location, "host"),
            other => panic!(
                "{shape}: expected OutOfMemory, got {:?}",
                other.map(|f| f.shape)
            ),
        }
    }
}

/// Views accept exactly the lengths the shape asks for, name the buffer at
/// fault otherwise, and split into matrices of the right sizes.
fn check_views(shape: Shape, r: &mut Reader<'_>) {
    let delta = |r: &mut Reader<'_>| -> isize { isize::from(r.u8() % 5) - 2 };
    let resize = |len: usize, d: isize| len.checked_add_signed(d);
    let (da, dh, dt, di) = (delta(r), delta(r), delta(r), delta(r));

    if let Some(len) = resize(shape.a_len(), da) {
        let a: Vec<f32> = (0..len).map(|i| i as f32).collect();
        match BatchRef::new(shape, &a) {
            Ok(v) => {
                assert_eq!(da, 0);
                assert_eq!(v.shape(), shape);
                let per = shape.matrix_len();
                let expected = if per == 0 { 0 } else { shape.batch() };
                assert_eq!(v.matrices().len(), expected);
                for (b, m) in v.matrices().enumerate() {
                    assert_eq!(m, v.matrix(b));
                    assert_eq!(m, &a[b * per..(b + 1) * per]);
                }
            }
            Err(e) => assert_mismatch(e, "a", shape.a_len(), len),
        }
    }

    let (Some(hl), Some(tl), Some(il)) = (
        resize(shape.a_len(), dh),
        resize(shape.tau_len(), dt),
        resize(shape.info_len(), di),
    ) else {
        return;
    };
    let (mut h, mut tau, mut info) = (vec![0.0f32; hl], vec![0.0f32; tl], vec![Info::OK; il]);
    match BatchMut::new(shape, &mut h, &mut tau, &mut info) {
        Ok(mut out) => {
            assert_eq!((dh, dt, di), (0, 0, 0));
            let count = if shape.n() == 0 { 0 } else { shape.batch() };
            let mut seen = 0;
            for (b, (hb, tb, ib)) in out.matrices_mut().enumerate() {
                assert_eq!(hb.len(), shape.matrix_len());
                assert_eq!(tb.len(), shape.n());
                hb.fill(b as f32);
                tb.fill(b as f32);
                *ib = Info(b as i32);
                seen += 1;
            }
            assert_eq!(seen, count);
            let (ph, pt, pi) = out.parts();
            assert_eq!((ph.len(), pt.len(), pi.len()), (hl, tl, il));
            for (b, i) in info.iter().enumerate().take(count) {
                assert_eq!(*i, Info(b as i32));
                assert!(
                    h[b * shape.matrix_len()..][..shape.matrix_len()]
                        .iter()
                        .all(|&x| x == b as f32)
                );
            }
        }
        // The first mismatching buffer, in argument order, is the one named.
        Err(e) => {
            if dh != 0 {
                assert_mismatch(e, "h", shape.a_len(), hl);
            } else if dt != 0 {
                assert_mismatch(e, "tau", shape.tau_len(), tl);
            } else {
                assert_mismatch(e, "info", shape.info_len(), il);
            }
        }
    }
}

fn assert_mismatch(e: QrError, name: &'static str, expected: usize, actual: usize) {
    assert_eq!(
        e,
        QrError::LengthMismatch {
            what: name,
            expected,
            actual
        }
    );
}
