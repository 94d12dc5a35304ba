/* The instance and the model-independent helpers of the test FMUs, shared by the FMI 2.0
   and FMI 3.0 frames. Included after the generated variables header (NR, NI, NX, NZ, the
   value references VR_*, R_START, I_START, GUID) and before the model file.

   Value references: the reals are 0 .. NR-1 (the NX continuous states first, then their
   NX derivatives, then the rest), the integers NR .. NR+NI-1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Instance {
    double r[NR];
    int i[NI + 1];
    double d[4];          /* the model's own discrete state */
    double time;
    double next_event;    /* time of the next time event, INFINITY when there is none */
    int values_changed;   /* model_event re-initialized continuous states */
    int more;             /* model_event asks for another discrete-update pass */
    int terminate;        /* model_event asks to end the simulation */
    const void *logger;   /* the importer's logger and environment (frame-specific) */
    void *environment;
    char name[64];
} Instance;

#define INT_VAR(m, vr) ((m)->i[(vr) - NR])

static void model_start(Instance *m);
static void model_derivatives(const Instance *m, double dx[]);
static void model_indicators(const Instance *m, double z[]);
static void model_event(Instance *m);
static void model_outputs(Instance *m);
static int model_substeps(const Instance *m);   /* co-simulation: RK4 steps per communication step */
static const char *model_check(const Instance *m);   /* why the parameters are unusable, or NULL */
static int model_completed(Instance *m);   /* completedIntegratorStep: 1 to ask for an event (a step event) */

static void reset_instance(Instance *m) {
    memcpy(m->r, R_START, sizeof m->r);
    memcpy(m->i, I_START, sizeof m->i);
    memset(m->d, 0, sizeof m->d);
    m->time = 0.0;
    m->next_event = INFINITY;
    m->values_changed = m->more = m->terminate = 0;
    model_start(m);
}

/* Derivatives and outputs as a get should see them. */
static void refresh(Instance *m) {
    double dx[NX + 1];
    int k;
    model_derivatives(m, dx);
    for (k = 0; k < NX; k++) m->r[NX + k] = dx[k];
    model_outputs(m);
}

static int reals_known(const unsigned int vr[], size_t n) {
    size_t k;
    for (k = 0; k < n; k++) if (vr[k] >= NR) return 0;
    return 1;
}

static int integers_known(const unsigned int vr[], size_t n) {
    size_t k;
    for (k = 0; k < n; k++) if (vr[k] < NR || vr[k] >= NR + NI) return 0;
    return 1;
}

/* The discrete-update passes of one event iteration step: 1 when another pass is needed. */
static int discrete_update(Instance *m) {
    m->more = 0;
    model_event(m);
    return m->more;
}

/* One communication step of co-simulation: model_substeps() classical RK4 steps with the
   inputs held, then the discrete update for any time event reached. */
static void co_step(Instance *m, double h) {
    double x0[NX + 1], k1[NX + 1], k2[NX + 1], k3[NX + 1], k4[NX + 1];
    int n = model_substeps(m) > 0 ? model_substeps(m) : 1, s, k;
    double tau = h / n, t0 = m->time;
    for (s = 0; s < n; s++) {
        memcpy(x0, m->r, sizeof(double) * NX);
        model_derivatives(m, k1);
        for (k = 0; k < NX; k++) m->r[k] = x0[k] + 0.5 * tau * k1[k];
        model_derivatives(m, k2);
        for (k = 0; k < NX; k++) m->r[k] = x0[k] + 0.5 * tau * k2[k];
        model_derivatives(m, k3);
        for (k = 0; k < NX; k++) m->r[k] = x0[k] + tau * k3[k];
        model_derivatives(m, k4);
        for (k = 0; k < NX; k++) m->r[k] = x0[k] + tau / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k]);
    }
    m->time = t0 + h;
    while (discrete_update(m)) {}
}

/* ---- The bodies of the FMI functions, shared by both frames: 0 on success, -1 for an
   unknown value reference or a wrong array size (the frame logs and answers Error). */

static int get_reals(Instance *m, const unsigned int vr[], size_t n, double values[]) {
    size_t k;
    if (!reals_known(vr, n)) return -1;
    refresh(m);
    for (k = 0; k < n; k++) values[k] = m->r[vr[k]];
    return 0;
}

static int set_reals(Instance *m, const unsigned int vr[], size_t n, const double values[]) {
    size_t k;
    if (!reals_known(vr, n)) return -1;
    for (k = 0; k < n; k++) m->r[vr[k]] = values[k];
    return 0;
}

static int get_integers(Instance *m, const unsigned int vr[], size_t n, int values[]) {
    size_t k;
    if (!integers_known(vr, n)) return -1;
    for (k = 0; k < n; k++) values[k] = INT_VAR(m, vr[k]);
    return 0;
}

static int set_integers(Instance *m, const unsigned int vr[], size_t n, const int values[]) {
    size_t k;
    if (!integers_known(vr, n)) return -1;
    for (k = 0; k < n; k++) INT_VAR(m, vr[k]) = values[k];
    return 0;
}

static int set_states(Instance *m, const double x[], size_t nx) {
    if (nx != NX) return -1;
    memcpy(m->r, x, sizeof(double) * NX);
    return 0;
}

static int get_states(const Instance *m, double x[], size_t nx) {
    if (nx != NX) return -1;
    memcpy(x, m->r, sizeof(double) * NX);
    return 0;
}

static int get_derivatives(const Instance *m, double dx[], size_t nx) {
    if (nx != NX) return -1;
    model_derivatives(m, dx);
    return 0;
}

static int get_indicators(const Instance *m, double z[], size_t nz) {
    if (nz != NZ) return -1;
    model_indicators(m, z);
    return 0;
}

static void get_nominals(double nominal[], size_t nx) {
    size_t k;
    for (k = 0; k < nx; k++) nominal[k] = 1.0;
}

/* One discrete-update pass as the event-info fields report it. */
typedef struct {
    int more, terminate, values_changed, time_defined;
    double next_time;
} Update;

static Update update_pass(Instance *m) {
    Update u;
    m->values_changed = 0;
    u.more = discrete_update(m);
    u.terminate = m->terminate;
    u.values_changed = m->values_changed;
    u.time_defined = isfinite(m->next_event);
    u.next_time = u.time_defined ? m->next_event : 0.0;
    return u;
}

/* The step of co-simulation at communication point t: 0, or -1 when t is not the FMU's time. */
static int do_step(Instance *m, double t, double h) {
    if (fabs(t - m->time) > 1e-9 * (1.0 + fabs(t))) return -1;
    co_step(m, h);
    return 0;
}
