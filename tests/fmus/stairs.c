/* x' = n, where the counter n steps up by one every `period` seconds: time events. Each
   step takes two discrete-update passes (the first arms it, d[0] = 1, and asks for another
   pass; the second commits), so an importer that does not iterate to the fixed point
   never sees n move. */
static void model_start(Instance *m) { m->next_event = m->r[VR_period]; }

static void model_derivatives(const Instance *m, double dx[]) { dx[0] = (double)INT_VAR(m, VR_n); }

static void model_indicators(const Instance *m, double z[]) { (void)m; (void)z; }

static void model_event(Instance *m) {
    if (m->time < m->next_event) return;
    if (!m->d[0]) {
        m->d[0] = 1.0;
        m->more = 1;
        return;
    }
    m->d[0] = 0.0;
    INT_VAR(m, VR_n) += 1;
    m->next_event = (INT_VAR(m, VR_n) + 1) * m->r[VR_period];
}

static void model_outputs(Instance *m) { (void)m; }
static int model_substeps(const Instance *m) { (void)m; return 10; }
static const char *model_check(const Instance *m) { (void)m; return NULL; }
static int model_completed(Instance *m) { (void)m; return 0; }
