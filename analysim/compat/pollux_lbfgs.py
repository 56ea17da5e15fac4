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
def _two_loop(grad, pairs_s, pairs_y, pairs, free, q, s, y, sy, alphas):
    """The L-BFGS product of the inverse Hessian estimate and ``grad`` on the free
    variables, into ``q`` (the ``pairs`` oldest-first rows of ``pairs_s, pairs_y``, masked
    to them into ``s, y``; ``sy, alphas``: one per pair)."""
    m = len(grad)
    for i in range(m):
        q[i] = grad[i] if free[i] else 0.0
    if pairs == 0:
        return
    for k in range(pairs):
        for i in range(m):
            s[k, i] = pairs_s[k, i] if free[i] else 0.0
            y[k, i] = pairs_y[k, i] if free[i] else 0.0
        sy[k] = _dot(s[k], y[k])
    for k in range(pairs - 1, -1, -1):
        alphas[k] = 0.0
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
    for i in range(m):
        if not free[i]:
            q[i] = 0.0


@njit(cache=True, error_model="numpy")
def _minimize(rows, x0, lower, upper, fixed, iterations):
    """As :func:`analysim.compat.pollux_goodput._minimize`, on arrays."""
    m = len(x0)
    x = np.empty(m)
    for i in range(m):
        x[i] = min(max(x0[i], lower[i]), upper[i])
    terms = np.zeros((len(rows) + 1, 9))
    grad = np.zeros(m)
    value = _value(rows, x, terms)
    if not (math.isfinite(value) and _gradient(rows, x, terms, grad)):
        value = math.inf
        grad[:] = 0.0
    pairs_s, pairs_y = np.zeros((MEMORY, m)), np.zeros((MEMORY, m))
    s, y = np.zeros((MEMORY, m)), np.zeros((MEMORY, m))
    sy, alphas = np.zeros(MEMORY), np.zeros(MEMORY)
    pairs = 0
    trial, moved, trial_grad, change = np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m)
    free, projected, direction = np.zeros(m, dtype=np.bool_), np.zeros(m), np.zeros(m)
    for _ in range(iterations):
        biggest = 0.0
        for i in range(m):
            v, g = x[i], grad[i]
            held = fixed[i] or (v <= lower[i] and g > 0) or (v >= upper[i] and g < 0)
            free[i] = not held
            projected[i] = 0.0 if held else g
            if not held:
                biggest = max(biggest, abs(g))
        if biggest < 1e-5:
            break
        _two_loop(projected, pairs_s, pairs_y, pairs, free, direction, s, y, sy, alphas)
        for i in range(m):
            direction[i] = -direction[i]
        if _dot(direction, projected) >= 0:
            for i in range(m):
                direction[i] = -projected[i]
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
        for i in range(m):
            change[i] = trial_grad[i] - grad[i]
        if _dot(moved, change) > 1e-12:
            if pairs == MEMORY:
                for k in range(MEMORY - 1):
                    pairs_s[k], pairs_y[k] = pairs_s[k + 1], pairs_y[k + 1]
                pairs -= 1
            pairs_s[pairs], pairs_y[pairs] = moved, change
            pairs += 1
        done = (value - trial_value) <= 2.2e-9 * max(abs(value), abs(trial_value), 1.0)
        x[:], grad[:] = trial, trial_grad
        value = trial_value
        if done:
            break
    return x
