/* A ball falling under gravity g onto the floor h = 0, bouncing back with e times its speed.
   Event indicator h; the impact (h <= 0 while falling) reverses v. Below V_MIN the ball
   comes to rest (d[0] = 1) instead of bouncing ever faster (Zeno). Output bounces counts
   the impacts; z is the event indicator as a variable (FMI 3.0 declares it). */
#define V_MIN 0.1

static void model_start(Instance *m) { (void)m; }

static void model_derivatives(const Instance *m, double dx[]) {
    dx[0] = m->r[VR_v];
    dx[1] = m->d[0] ? 0.0 : -m->r[VR_g];
}

static void model_indicators(const Instance *m, double z[]) { z[0] = m->d[0] ? 1.0 : m->r[VR_h]; }

static void model_event(Instance *m) {
    if (!m->d[0] && m->r[VR_h] <= 0.0 && m->r[VR_v] < 0.0) {
        m->r[VR_h] = 0.0;
        m->r[VR_v] = -m->r[VR_e] * m->r[VR_v];
        if (m->r[VR_v] < V_MIN) {
            m->r[VR_v] = 0.0;
            m->d[0] = 1.0;
        }
        INT_VAR(m, VR_bounces) += 1;
        m->values_changed = 1;
    }
}

static void model_outputs(Instance *m) { model_indicators(m, &m->r[VR_z]); }
static int model_substeps(const Instance *m) { (void)m; return 10; }
static const char *model_check(const Instance *m) { (void)m; return NULL; }
static int model_completed(Instance *m) { (void)m; return 0; }
