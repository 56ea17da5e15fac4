"""The step-time fit's search compiled (numba): :func:`analysim.compat.pollux_goodput._minimize`
and its objective on arrays, operation for operation (the same sums in the same order), so
that it returns the same parameters as the plain-float version, about 50 times faster.

A value or gradient the plain version cannot compute (a math error) is one that is not
finite here (numpy's error model: no exception), and is handled alike: the value counts as
``inf``, a trial point without a gradient is rejected.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

EPS = 1e-8  # as pollux_goodput.EPS
MEMORY = 10  # L-BFGS pairs kept


def minimize(rows: np.ndarray, x0, lower, upper, fixed, iterations: int = 15000) -> list[float]:
    """The minimum within bounds of the fitting objective of a profile's ``rows`` (per
    configuration: across nodes, within one node, replicas beyond 2, atomic batch, log of the
    accumulation time, log of the step time), from ``x0``."""
    x = _minimize(
        np.ascontiguousarray(rows, dtype=np.float64),
        np.asarray(x0, dtype=np.float64),
        np.asarray(lower, dtype=np.float64),
        np.asarray(upper, dtype=np.float64),
        np.asarray(fixed, dtype=np.bool_),
        iterations,
    )
    return x.tolist()


@njit(cache=True, error_model="numpy")
def _value(rows, x, terms):
    """The objective at ``x`` (not finite where the plain version fails); the per-row terms
    the gradient reuses into ``terms`` (compute, network, their powers, total, their logs,
    both errors), the two errors' weights into ``terms[-1, :2]``."""
    ac, bc, an, bn, ar, br, gamma = x[0], x[1], x[2], x[3], x[4], x[5], x[6]
    n = len(rows)
    sum1 = 0.0
    sum2 = 0.0
    for i in range(n):
        inter, intra, more, atomic = rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3]
        compute = ac + bc * atomic
        if inter > 0:
            network = an + bn * more
        elif intra > 0:
            network = ar + br * more
        else:
            network = EPS + EPS * more
        power_c, power_n = compute**gamma, network**gamma
        total = power_c + power_n
        log_total, log_c = math.log(total), math.log(compute)
        d1 = log_c - rows[i, 4]
        d2 = log_total / gamma - rows[i, 5]
        sum1 += d1 * d1
        sum2 += d2 * d2
        t = terms[i]
        t[0], t[1], t[2], t[3], t[4] = compute, network, power_c, power_n, total
        t[5], t[6], t[7], t[8] = log_total, log_c, d1, d2
    err1, err2 = math.sqrt(sum1 / n), math.sqrt(sum2 / n)
    penalty = 1e-2 * ((bn / an) * (bn / an) + (br / ar) * (br / ar))
    value = err1 + err2 + 1e-3 * ((gamma - 1) * (gamma - 1)) + penalty
    terms[n, 0] = 1 / (n * err1) if err1 > 0 else 0.0
    terms[n, 1] = 1 / (n * err2) if err2 > 0 else 0.0
    return value


@njit(cache=True, error_model="numpy")
def _gradient(rows, x, terms, grad):
    """The objective's gradient into ``grad`` from :func:`_value`'s terms; whether it is
    finite."""
    an, bn, ar, br, gamma = x[2], x[3], x[4], x[5], x[6]
    n = len(rows)
    w1_scale, w2_scale = terms[n, 0], terms[n, 1]
    grad[:] = 0.0
    for i in range(n):
        inter, intra, more, atomic = rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3]
        compute, network, power_c, power_n, total = (
            terms[i, 0], terms[i, 1], terms[i, 2], terms[i, 3], terms[i, 4],
        )  # fmt: skip
        log_total, log_c, d1, d2 = terms[i, 5], terms[i, 6], terms[i, 7], terms[i, 8]
        w1, w2 = d1 * w1_scale, d2 * w2_scale
        dc = power_c / compute / total
        dn = power_n / network / total
        dg = -log_total / (gamma * gamma) + (power_c * log_c + power_n * math.log(network)) / (
            gamma * total
        )
        via_compute = w1 / compute + w2 * dc
        grad[0] += via_compute
        grad[1] += via_compute * atomic
        if inter > 0:
            grad[2] += w2 * dn
            grad[3] += w2 * dn * more
        elif intra > 0:
            grad[4] += w2 * dn
            grad[5] += w2 * dn * more
        grad[6] += w2 * dg
    grad[2] += -2e-2 * (bn * bn) / (an * an * an)
    grad[3] += 2e-2 * bn / (an * an)
    grad[4] += -2e-2 * (br * br) / (ar * ar * ar)
    grad[5] += 2e-2 * br / (ar * ar)
    grad[6] += 2e-3 * (gamma - 1)
    for g in grad:
        if not math.isfinite(g):
            return False
    return True


@njit(cache=True)
def _dot(a, b):
    out = 0.0
    for i in range(len(a)):
        out += a[i] * b[i]
    return out


@njit(cache=True, error_model="numpy")
def _two_loop(grad, pairs_s, pairs_y, pairs, free):
    """The L-BFGS product of the inverse Hessian estimate and ``grad`` on the free
    variables (the ``pairs`` oldest-first rows of ``pairs_s, pairs_y``, masked to them)."""
    m = len(grad)
    q = np.where(free, grad, 0.0)
    if pairs == 0:
        return q
    s = np.where(free, pairs_s[:pairs], 0.0)
    y = np.where(free, pairs_y[:pairs], 0.0)
    sy = np.array([_dot(s[k], y[k]) for k in range(pairs)])
    alphas = np.zeros(pairs)
    for k in range(pairs - 1, -1, -1):
        if sy[k] <= 1e-12:
            continue
        a = _dot(s[k], q) / sy[k]
        alphas[k] = a
        for i in range(m):
            q[i] = q[i] - a * y[k, i]
    yy = _dot(y[pairs - 1], y[pairs - 1])
    if yy > 0 and sy[pairs - 1] > 1e-12:
        ratio = sy[pairs - 1] / yy
        for i in range(m):
            q[i] = q[i] * ratio
    for k in range(pairs):
        if sy[k] <= 1e-12:
            continue
        b = _dot(y[k], q) / sy[k]
        for i in range(m):
            q[i] = q[i] + s[k, i] * (alphas[k] - b)
    return np.where(free, q, 0.0)


@njit(cache=True, error_model="numpy")
def _minimize(rows, x0, lower, upper, fixed, iterations):
    """As :func:`analysim.compat.pollux_goodput._minimize`, on arrays."""
    m = len(x0)
    x = np.minimum(np.maximum(x0, lower), upper)
    terms = np.zeros((len(rows) + 1, 9))
    grad = np.zeros(m)
    value = _value(rows, x, terms)
    if not (math.isfinite(value) and _gradient(rows, x, terms, grad)):
        value = math.inf
        grad[:] = 0.0
    pairs_s = np.zeros((MEMORY, m))
    pairs_y = np.zeros((MEMORY, m))
    pairs = 0
    trial = np.zeros(m)
    moved = np.zeros(m)
    trial_grad = np.zeros(m)
    for _ in range(iterations):
        free = np.zeros(m, dtype=np.bool_)
        biggest = 0.0
        for i in range(m):
            v, g = x[i], grad[i]
            held = fixed[i] or (v <= lower[i] and g > 0) or (v >= upper[i] and g < 0)
            free[i] = not held
            if free[i]:
                biggest = max(biggest, abs(g))
        if biggest < 1e-5:
            break
        projected = np.where(free, grad, 0.0)
        direction = -_two_loop(projected, pairs_s, pairs_y, pairs, free)
        if _dot(direction, projected) >= 0:
            direction = -projected
            pairs = 0
        step = 1.0
        accepted = False
        trial_value = math.inf
        while step > 1e-20:
            for i in range(m):
                trial[i] = min(max(x[i] + step * direction[i], lower[i]), upper[i])
                moved[i] = trial[i] - x[i]
            trial_value = _value(rows, trial, terms)
            if math.isfinite(trial_value) and trial_value <= value + 1e-4 * _dot(projected, moved):
                if _gradient(rows, trial, terms, trial_grad):
                    accepted = True
                    break
            step /= 2
        if not accepted:
            break
        y = trial_grad - grad
        if _dot(moved, y) > 1e-12:
            if pairs == MEMORY:
                pairs_s[:-1] = pairs_s[1:].copy()
                pairs_y[:-1] = pairs_y[1:].copy()
                pairs -= 1
            pairs_s[pairs] = moved
            pairs_y[pairs] = y
            pairs += 1
        done = (value - trial_value) <= 2.2e-9 * max(abs(value), abs(trial_value), 1.0)
        x = trial.copy()
        value = trial_value
        grad = trial_grad.copy()
        if done:
            break
    return x
