/* First-order lag x' = (k u - x) / T with output y = x, and a direct-feedthrough output
   ku = k u. Co-simulation integrates nsub RK4 steps per communication step. */
static void model_start(Instance *m) { (void)m; }

static void model_derivatives(const Instance *m, double dx[]) {
    dx[0] = (m->r[VR_k] * m->r[VR_u] - m->r[VR_x]) / m->r[VR_T];
}

static void model_indicators(const Instance *m, double z[]) { (void)m; (void)z; }
static void model_event(Instance *m) { (void)m; }

static void model_outputs(Instance *m) {
    m->r[VR_y] = m->r[VR_x];
    m->r[VR_ku] = m->r[VR_k] * m->r[VR_u];
}

static int model_substeps(const Instance *m) { return INT_VAR(m, VR_nsub); }
static const char *model_check(const Instance *m) {
    return m->r[VR_T] > 0.0 ? NULL : "the time constant T must be positive";
}
static int model_completed(Instance *m) { (void)m; return 0; }
