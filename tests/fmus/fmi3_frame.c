/* FMI 3.0 Model Exchange and Co-Simulation functions around one test model (reals as
   Float64, integers as Int32). Compiled like fmi2_frame.c; the functions the tests never
   call come from the generated stubs file and answer fmi3Error. */
#include "fmi3Functions.h"
#include "vars.h"
#include "core.h"
#include MODEL_FILE

typedef struct {
    Instance m;
    fmi3LogMessageCallback log;
    fmi3InstanceEnvironment environment;
    int cosimulation;
} Component;

static void say(Component *c, fmi3Status status, const char *message) {
    if (c->log) c->log(c->environment, status, "logStatusError", message);
}

static fmi3Status unknown_reference(Component *c) {
    say(c, fmi3Error, "unknown value reference");
    return fmi3Error;
}

static Component *create(fmi3String name, fmi3String token, fmi3InstanceEnvironment environment,
                         fmi3LogMessageCallback log, int cosimulation) {
    Component *c;
    if (!token || strcmp(token, GUID) != 0) return NULL;
    c = (Component *)calloc(1, sizeof(Component));
    if (!c) return NULL;
    c->log = log;
    c->environment = environment;
    c->cosimulation = cosimulation;
    strncpy(c->m.name, name ? name : "", sizeof c->m.name - 1);
    reset_instance(&c->m);
    return c;
}

const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance c, fmi3Boolean on, size_t n, const fmi3String categories[]) {
    (void)c; (void)on; (void)n; (void)categories;
    return fmi3OK;
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                          fmi3Boolean visible, fmi3Boolean logging,
                                          fmi3InstanceEnvironment environment, fmi3LogMessageCallback log) {
    (void)resources; (void)visible; (void)logging;
    return create(name, token, environment, log, 0);
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                         fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean eventModeUsed,
                                         fmi3Boolean earlyReturnAllowed, const fmi3ValueReference required[],
                                         size_t nRequired, fmi3InstanceEnvironment environment,
                                         fmi3LogMessageCallback log, fmi3IntermediateUpdateCallback update) {
    (void)resources; (void)visible; (void)logging; (void)eventModeUsed; (void)earlyReturnAllowed;
    (void)required; (void)nRequired; (void)update;
    return create(name, token, environment, log, 1);
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                               fmi3Boolean visible, fmi3Boolean logging,
                                               fmi3InstanceEnvironment environment, fmi3LogMessageCallback log,
                                               fmi3ClockUpdateCallback clockUpdate,
                                               fmi3LockPreemptionCallback lock, fmi3UnlockPreemptionCallback unlock) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging; (void)environment; (void)log;
    (void)clockUpdate; (void)lock; (void)unlock;
    return NULL;
}

void fmi3FreeInstance(fmi3Instance c) { free(c); }

fmi3Status fmi3EnterInitializationMode(fmi3Instance c, fmi3Boolean toleranceDefined, fmi3Float64 tolerance,
                                       fmi3Float64 startTime, fmi3Boolean stopTimeDefined, fmi3Float64 stopTime) {
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    ((Component *)c)->m.time = startTime;
    return fmi3OK;
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance c) {
    Component *comp = (Component *)c;
    const char *problem = model_check(&comp->m);
    if (problem) {
        say(comp, fmi3Error, problem);
        return fmi3Error;
    }
    if (comp->cosimulation)   /* a model exchange importer runs the event iteration itself */
        while (discrete_update(&comp->m)) {}
    return fmi3OK;
}

fmi3Status fmi3EnterEventMode(fmi3Instance c) { (void)c; return fmi3OK; }
fmi3Status fmi3Terminate(fmi3Instance c) { (void)c; return fmi3OK; }

fmi3Status fmi3Reset(fmi3Instance c) {
    reset_instance(&((Component *)c)->m);
    return fmi3OK;
}

#define ANSWER(c, failed) ((failed) ? unknown_reference(c) : fmi3OK)

fmi3Status fmi3GetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3Float64 value[],
                          size_t nValues) {
    return ANSWER((Component *)c, nValues != n || get_reals(&((Component *)c)->m, vr, n, value));
}

fmi3Status fmi3SetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3Float64 value[],
                          size_t nValues) {
    return ANSWER((Component *)c, nValues != n || set_reals(&((Component *)c)->m, vr, n, value));
}

fmi3Status fmi3GetInt32(fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3Int32 value[],
                        size_t nValues) {
    return ANSWER((Component *)c, nValues != n || get_integers(&((Component *)c)->m, vr, n, value));
}

fmi3Status fmi3SetInt32(fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3Int32 value[],
                        size_t nValues) {
    return ANSWER((Component *)c, nValues != n || set_integers(&((Component *)c)->m, vr, n, value));
}

/* ---- Model Exchange */

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance c, fmi3Boolean *needUpdate, fmi3Boolean *terminate,
                                    fmi3Boolean *nominalsChanged, fmi3Boolean *valuesChanged,
                                    fmi3Boolean *nextEventTimeDefined, fmi3Float64 *nextEventTime) {
    Update u = update_pass(&((Component *)c)->m);
    *needUpdate = u.more;
    *terminate = u.terminate;
    *nominalsChanged = fmi3False;
    *valuesChanged = u.values_changed;
    *nextEventTimeDefined = u.time_defined;
    *nextEventTime = u.next_time;
    return fmi3OK;
}

fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance c) { (void)c; return fmi3OK; }

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance c, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi3Boolean *enterEventMode, fmi3Boolean *terminateSimulation) {
    (void)noSetFMUStatePriorToCurrentPoint;
    *enterEventMode = model_completed(&((Component *)c)->m) ? fmi3True : fmi3False;
    *terminateSimulation = fmi3False;
    return fmi3OK;
}

fmi3Status fmi3SetTime(fmi3Instance c, fmi3Float64 time) {
    ((Component *)c)->m.time = time;
    return fmi3OK;
}

fmi3Status fmi3SetContinuousStates(fmi3Instance c, const fmi3Float64 x[], size_t nx) {
    return ANSWER((Component *)c, set_states(&((Component *)c)->m, x, nx));
}

fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance c, fmi3Float64 dx[], size_t nx) {
    return ANSWER((Component *)c, get_derivatives(&((Component *)c)->m, dx, nx));
}

fmi3Status fmi3GetEventIndicators(fmi3Instance c, fmi3Float64 z[], size_t nz) {
    return ANSWER((Component *)c, get_indicators(&((Component *)c)->m, z, nz));
}

fmi3Status fmi3GetContinuousStates(fmi3Instance c, fmi3Float64 x[], size_t nx) {
    return ANSWER((Component *)c, get_states(&((Component *)c)->m, x, nx));
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance c, fmi3Float64 nominal[], size_t nx) {
    (void)c;
    get_nominals(nominal, nx);
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance c, size_t *n) {
    (void)c;
    *n = NZ;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance c, size_t *n) {
    (void)c;
    *n = NX;
    return fmi3OK;
}

/* ---- Co-Simulation */

fmi3Status fmi3EnterStepMode(fmi3Instance c) { (void)c; return fmi3OK; }

fmi3Status fmi3DoStep(fmi3Instance c, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                      fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation, fmi3Boolean *earlyReturn,
                      fmi3Float64 *lastSuccessfulTime) {
    Component *comp = (Component *)c;
    (void)noSetFMUStatePriorToCurrentPoint;
    if (do_step(&comp->m, t, h)) {
        say(comp, fmi3Error, "doStep: the communication point is not the FMU's time");
        return fmi3Error;
    }
    *eventHandlingNeeded = fmi3False;
    *terminateSimulation = comp->m.terminate ? fmi3True : fmi3False;
    *earlyReturn = fmi3False;
    *lastSuccessfulTime = comp->m.time;
    return fmi3OK;
}
