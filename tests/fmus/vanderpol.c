/* Van der Pol oscillator: x0' = x1, x1' = mu (1 - x0^2) x1 - x0; the states are the outputs. */
static void model_start(Instance *m) { (void)m; }

static void model_derivatives(const Instance *m, double dx[]) {
    double x0 = m->r[VR_x0], x1 = m->r[VR_x1];
    dx[0] = x1;
    dx[1] = m->r[VR_mu] * (1.0 - x0 * x0) * x1 - x0;
}

static void model_indicators(const Instance *m, double z[]) { (void)m; (void)z; }
static void model_event(Instance *m) { (void)m; }
static void model_outputs(Instance *m) { (void)m; }
static int model_substeps(const Instance *m) { (void)m; return 10; }
static const char *model_check(const Instance *m) { (void)m; return NULL; }
