"""A batched Levenberg–Marquardt in torch for benches/fit_batch_peers.py: F fits of gauss-2d
(a·exp(−((x−x0)² + (y−y0)²)/(2σ²)) + b, parameters (a, x0, y0, σ, b)) at once, as tensors.

Written for the bench, as the batched torch peer a user would write: every fit's residuals and
analytic Jacobian in one pass, JᵀJ and Jᵀr by batched products, the step from
(JᵀJ + λ·diag(JᵀJ)) h = −Jᵀr by a batched Cholesky (`torch.linalg.cholesky_ex` and
`cholesky_solve`), and per fit: the damping λ, the gain ratio ρ = actual / predicted reduction,
accept or reject (masks, no branches), and convergence by MINPACK's tests (ftol: the actual and
predicted relative reductions of the cost both ≤ ftol with ρ ≤ 2; xtol: the scaled step
‖D^½h‖ ≤ xtol·‖D^½p‖, D = diag(JᵀJ)). The loop reads nothing back from the device except, every
`check_every` iterations, how many fits are still running: it stops when none is, and when
fewer than half of the fits it steps are running it drops the finished ones (so the late
iterations step only the slow fits). The fits go through in chunks of `chunk`, so that 10⁷ fit
in the device's memory.

`fit(y, p0, grid)`: y (F, M) and p0 (F, 5) tensors on one device, in one dtype (float32 or
float64), grid (M, 2) the pixel coordinates. Returns (popt (F, 5), status (F,) int8, nit (F,)
int32) on that device: status 1 converged by ftol, 2 by xtol, 3 both, 0 out of iterations, −1 a
non-finite cost or a damping past 1e16 (a failure).
"""

import torch

LAMBDA0 = 1e-3  # the first damping, relative to diag(JᵀJ)
ACCEPT = 1e-4  # a step is taken when ρ exceeds this


def model_and_jacobian(p, gx, gy):
    """gauss-2d at parameters p (F, 5) on the pixels (gx, gy) (M,): values (F, M) and the
    analytic Jacobian (F, M, 5)."""
    a, x0, y0, s, b = p.unbind(-1)
    dx, dy = gx - x0[:, None], gy - y0[:, None]
    inv_s2 = 1.0 / (s * s)[:, None]
    rr = dx * dx + dy * dy
    e = torch.exp(-0.5 * rr * inv_s2)
    ae = a[:, None] * e * inv_s2
    jac = torch.stack([e, ae * dx, ae * dy, ae * rr / s[:, None], torch.ones_like(e)], dim=-1)
    return a[:, None] * e + b[:, None], jac


def model(p, gx, gy):
    """gauss-2d's values alone (F, M), computed as model_and_jacobian computes them."""
    a, x0, y0, s, b = p.unbind(-1)
    dx, dy = gx - x0[:, None], gy - y0[:, None]
    e = torch.exp(-0.5 * (dx * dx + dy * dy) * (1.0 / (s * s)[:, None]))
    return a[:, None] * e + b[:, None]


def _solve_chunk(y, p, gx, gy, ftol, xtol, max_iter, check_every):
    """LM on one chunk; returns (popt, status, nit) for its fits."""
    fits, dev, dt = y.shape[0], y.device, y.dtype
    out_p, out_status = p.clone(), torch.zeros(fits, dtype=torch.int8, device=dev)
    out_nit = torch.zeros(fits, dtype=torch.int32, device=dev)
    idx = torch.arange(fits, device=dev)  # the fits this loop steps
    lam = torch.full((fits,), LAMBDA0, dtype=dt, device=dev)
    nu = torch.full((fits,), 2.0, dtype=dt, device=dev)
    status = torch.zeros(fits, dtype=torch.int8, device=dev)
    nit = torch.zeros(fits, dtype=torch.int32, device=dev)
    active = torch.ones(fits, dtype=torch.bool, device=dev)
    f, jac = model_and_jacobian(p, gx, gy)
    r = f - y
    cost = 0.5 * (r * r).sum(-1)
    eye = torch.eye(5, dtype=dt, device=dev)
    tiny = torch.finfo(dt).tiny
    for it in range(1, max_iter + 1):
        a = torch.bmm(jac.transpose(1, 2), jac)  # JᵀJ (F, 5, 5)
        g = torch.bmm(jac.transpose(1, 2), r[..., None])  # Jᵀr (F, 5, 1)
        d = torch.diagonal(a, dim1=-2, dim2=-1).clamp_min(tiny)  # diag(JᵀJ) (F, 5)
        m = a + (lam[:, None] * d)[..., None] * eye
        chol, info = torch.linalg.cholesky_ex(m)
        h = -torch.cholesky_solve(g, chol)[..., 0]  # the step (F, 5)
        solved = (info == 0) & torch.isfinite(h).all(-1)
        h = torch.where(solved[:, None], h, torch.zeros_like(h))
        trial = p + h
        r_new = model(trial, gx, gy) - y
        cost_new = 0.5 * (r_new * r_new).sum(-1)
        # Predicted reduction of ½‖r‖² by the linear model: ½(λ·hᵀDh − gᵀh), as (A + λD)h = −g.
        gh = (g[..., 0] * h).sum(-1)
        pred = 0.5 * (lam * (d * h * h).sum(-1) - gh)
        actual = cost - cost_new
        rho = torch.where(pred > 0, actual / pred.clamp_min(tiny), torch.full_like(pred, -1.0))
        rho = torch.where(torch.isfinite(cost_new), rho, torch.full_like(rho, -1.0))
        take = active & solved & (rho > ACCEPT)
        # Per-fit damping (Nielsen): down by max(1/3, 1 − (2ρ − 1)³) on a taken step; else up by
        # ν, ν doubling on each rejection in a row.
        shrink = torch.clamp_min(1 - (2 * rho - 1) ** 3, 1.0 / 3)
        lam = torch.where(take, lam * shrink, torch.where(active, lam * nu, lam))
        nu = torch.where(take, torch.full_like(nu, 2.0), torch.where(active, nu * 2, nu))
        # MINPACK's tests, on the step just tried, taken or not.
        scale = cost.clamp_min(tiny)
        f_ok = (actual.abs() <= ftol * scale) & (pred <= ftol * scale) & (rho <= 2)
        sd = d.sqrt()
        x_ok = (sd * h).norm(dim=-1) <= xtol * (sd * p).norm(dim=-1)
        done = solved & (f_ok | x_ok)
        failed = ~torch.isfinite(cost) | (lam > 1e16)
        # The taken steps: new parameters, residuals, cost and Jacobian.
        p = torch.where(take[:, None], trial, p)
        r = torch.where(take[:, None], r_new, r)
        cost = torch.where(take, cost_new, cost)
        _, jac = model_and_jacobian(p, gx, gy)  # unchanged where no step was taken
        code = f_ok.to(torch.int8) + 2 * x_ok.to(torch.int8)
        status = torch.where(active & failed, torch.full_like(status, -1), status)
        status = torch.where(active & done, code, status)
        nit = nit + active.to(torch.int32)
        active = active & ~done & ~failed
        if it % check_every == 0 or it == max_iter:
            running = int(active.sum())  # a read from the device, every check_every iterations
            if running == 0 or it == max_iter:
                break
            if running < idx.numel() // 2:  # keep the running fits only
                out_p[idx], out_status[idx], out_nit[idx] = p, status, nit
                keep = active.nonzero()[:, 0]
                idx, y, p, r, cost, jac = idx[keep], y[keep], p[keep], r[keep], cost[keep], jac[keep]
                lam, nu, status, nit, active = lam[keep], nu[keep], status[keep], nit[keep], active[keep]
    out_p[idx], out_status[idx], out_nit[idx] = p, status, nit
    return out_p, out_status, out_nit


def fit(y, p0, grid, ftol=1e-12, xtol=1e-12, max_iter=100, chunk=10**6, check_every=4):
    """Every fit of y (F, M) from p0 (F, 5), chunk by chunk; see the module's docstring.
    Tolerances below the dtype's epsilon are raised to it."""
    eps = torch.finfo(y.dtype).eps
    ftol, xtol = max(ftol, eps), max(xtol, eps)
    grid = torch.as_tensor(grid, dtype=y.dtype, device=y.device)
    gx, gy = grid[:, 0].contiguous(), grid[:, 1].contiguous()
    popt = torch.empty_like(p0)
    status = torch.empty(y.shape[0], dtype=torch.int8, device=y.device)
    nit = torch.empty(y.shape[0], dtype=torch.int32, device=y.device)
    for s in range(0, y.shape[0], chunk):
        e = min(s + chunk, y.shape[0])
        popt[s:e], status[s:e], nit[s:e] = _solve_chunk(
            y[s:e], p0[s:e].clone(), gx, gy, ftol, xtol, max_iter, check_every)
    return popt, status, nit
