/* A counter n that starts at its start value and steps up by one at every t = k * period
   (k = 1, 2, ...), each a time event of one discrete-update pass, and its integral x' = n.
   The first event is announced by the initial event iteration, the next one by each event
   (k * period, a product like the importer's grid, so the events fall on its points). */
static void model_start(Instance *m) { (void)m; }

static void model_derivatives(const Instance *m, double dx[]) { dx[0] = (double)INT_VAR(m, VR_n); }

static void model_indicators(const Instance *m, double z[]) { (void)m; (void)z; }

static void model_event(Instance *m) {
    double k = m->d[0];   /* events taken so far */
    if (isfinite(m->next_event) && m->time >= m->next_event) {
        INT_VAR(m, VR_n) += 1;
        k += 1.0;
        m->d[0] = k;
    }
    m->next_event = (k + 1.0) * m->r[VR_period];
}

static void model_outputs(Instance *m) { (void)m; }
static int model_substeps(const Instance *m) { (void)m; return 1; }
static const char *model_check(const Instance *m) {
    return m->r[VR_period] > 0.0 ? NULL : "the period must be positive";
}
static int model_completed(Instance *m) { (void)m; return 0; }
