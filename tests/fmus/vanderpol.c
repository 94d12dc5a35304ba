/* Van der Pol oscillator: x0' = x1, x1' = mu (1 - x0^2) x1 - x0; the states are outputs.
   Output crossings counts the sign changes of x0 the FMU sees at completed integrator steps
   (step events): d[0] is the sign at the last one, d[1] arms the count for the event. */
static void model_start(Instance *m) { m->d[0] = m->r[VR_x0] > 0.0; }

static void model_derivatives(const Instance *m, double dx[]) {
    double x0 = m->r[VR_x0], x1 = m->r[VR_x1];
    dx[0] = x1;
    dx[1] = m->r[VR_mu] * (1.0 - x0 * x0) * x1 - x0;
}

static int model_completed(Instance *m) {
    m->d[1] = (m->r[VR_x0] > 0.0) != (m->d[0] != 0.0);
    return m->d[1] != 0.0;
}

static void model_event(Instance *m) {
    if (!m->d[1]) return;
    m->d[1] = 0.0;
    m->d[0] = m->r[VR_x0] > 0.0;
    INT_VAR(m, VR_crossings) += 1;
}

static void model_indicators(const Instance *m, double z[]) { (void)m; (void)z; }
static void model_outputs(Instance *m) { (void)m; }
static int model_substeps(const Instance *m) { (void)m; return 10; }
static const char *model_check(const Instance *m) { (void)m; return NULL; }
