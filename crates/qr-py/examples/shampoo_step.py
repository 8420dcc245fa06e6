"""A SOAP/Shampoo-style preconditioner update of 64 layers of 512 x 512,
once with torch.linalg.qr and once with qr_rs.qr, on the GPU: the
statistics L <- b L + G G^T, then the eigenbasis by one power-iteration
step Q <- qr(L Q).Q. Prints both times (CUDA events, median of 20 steps)
and the float64 gate of qr_rs's factors. Run: python shampoo_step.py"""
import statistics, torch, qr_rs

def step(qr, L, Q, G, b=0.95):
    L.mul_(b).baddbmm_(G, G.transpose(1, 2), alpha=1 - b)  # the statistics
    return qr(torch.bmm(L, Q))  # power step + QR: the new eigenbasis

def timed(qr, L, Q, G, reps=20):
    ms, ev = [], [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for _ in range(reps + 1):
        ev[0].record(); out = step(qr, L.clone(), Q, G); ev[1].record()
        torch.cuda.synchronize(); ms.append(ev[0].elapsed_time(ev[1]))
    return out, statistics.median(ms[1:])

torch.manual_seed(0)
G = torch.randn(64, 512, 512, device="cuda")
L, Q = torch.eye(512, device="cuda").repeat(64, 1, 1), torch.linalg.qr(torch.randn(64, 512, 512, device="cuda")).Q
(qt, rt), t_torch = timed(torch.linalg.qr, L, Q, G)
(qq, rq), t_qr_rs = timed(qr_rs.qr, L, Q, G)
a = torch.bmm(L.clone().mul_(0.95).baddbmm_(G, G.transpose(1, 2), alpha=0.05), Q).double()
n, eps, one = 512, 2.0**-23, lambda x: x.abs().sum(-2).amax(-1)
recon = (one(a - qq.double() @ rq.double()) / (n * eps * one(a))).max().item()
orth = (one(qq.double().mT @ qq.double() - torch.eye(n, device="cuda", dtype=torch.float64)) / (n * eps)).max().item()
print(f"torch.linalg.qr step {t_torch:.2f} ms, qr_rs.qr step {t_qr_rs:.2f} ms ({t_torch / t_qr_rs:.1f}x)")
print(f"qr_rs: recon {recon:.3f}, orth {orth:.3f} (bar 5 and 25); max |Q - Q_torch| {(qq - qt).abs().max().item():.2e}")
