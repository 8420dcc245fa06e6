//! faer's own Householder QR (`qr_in_place`, no pivoting) as a peer.
//!
//! faer factors column-major matrices in place with its recommended block
//! size; its packed factor is LAPACK's `H`, and the diagonal of each block
//! of its coefficient matrix holds `1 / tau`. faer skips a column whose norm
//! is negligible (it reveals rank), after which its factor is no longer
//! `geqrf` form, so the output is only `geqrf` form on full-rank inputs.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::qr::no_pivoting::factor::{
    qr_in_place, qr_in_place_scratch, recommended_block_size,
};
use faer::{Mat, Par};
use qr_core::{Backend, BatchMut, BatchRef, QrError};

use super::{Spread, for_each_matrix};

/// faer's QR of every matrix, spread over the cores as [`Spread`] says.
#[derive(Clone, Debug)]
pub struct FaerPeer {
    spread: Spread,
    name: String,
}

impl FaerPeer {
    /// The peer in configuration `spread` (named `faer-batch`, `faer-inner`).
    pub fn new(spread: Spread) -> Self {
        Self {
            spread,
            name: format!("faer-{}", spread.suffix()),
        }
    }
}

impl Backend for FaerPeer {
    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        format!(
            "faer qr_in_place, {}, {} rayon threads",
            match self.spread {
                Spread::Batch => "sequential per matrix, rayon across the batch",
                Spread::Inner => "matrices in order, faer's parallelism inside each",
            },
            rayon::current_num_threads()
        )
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        let n = a.shape().n();
        let par = match self.spread {
            Spread::Batch => Par::Seq,
            Spread::Inner => Par::rayon(0),
        };
        for_each_matrix(a, out, self.spread, |a, h, tau| factor(n, a, h, tau, par));
        Ok(())
    }
}

fn factor(n: usize, a: &[f32], h: &mut [f32], tau: &mut [f32], par: Par) {
    let block = recommended_block_size::<f32>(n, n);
    let mut qr = Mat::<f32>::zeros(n, n);
    let mut coeff = Mat::<f32>::zeros(block, n);
    for j in 0..n {
        for (i, x) in qr.col_mut(j).iter_mut().enumerate() {
            *x = a[i * n + j];
        }
    }
    let mut mem = MemBuffer::new(qr_in_place_scratch::<f32>(
        n,
        n,
        block,
        par,
        Default::default(),
    ));
    qr_in_place(
        qr.as_mut(),
        coeff.as_mut(),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    );
    for j in 0..n {
        for (i, &x) in qr.col(j).iter().enumerate() {
            h[i * n + j] = x;
        }
    }
    for (j, t) in tau.iter_mut().enumerate() {
        // Blocks start at multiples of `block`, so column j's coefficient is
        // on the diagonal of its block; `1 / inf = 0` is an identity reflector.
        *t = coeff[(j % block, j)].recip();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::test_support::assert_peer_meets_bar;

    #[test]
    fn faer_output_is_geqrf_form_on_full_rank_inputs() {
        // Sizes around faer's block-size steps (1, 4, 8, 32, 48).
        for n in [1, 3, 16, 17, 33, 64, 130, 200] {
            assert_peer_meets_bar(&FaerPeer::new(Spread::Batch), n);
            assert_peer_meets_bar(&FaerPeer::new(Spread::Inner), n);
        }
    }
}
