/* FMI 2.0 Model Exchange and Co-Simulation functions around one test model. Compiled with
   -DMODEL_FILE=\"<model>.c\" and the generated vars.h; the functions the tests never call
   (FMU state, directional derivatives, status queries, ...) come from the generated
   stubs file and answer fmi2Error. */
#include "fmi2Functions.h"
#include "vars.h"
#include "core.h"
#include MODEL_FILE

typedef struct {
    Instance m;
    fmi2CallbackFunctions callbacks;
    int cosimulation;
} Component;

static void say(Component *c, fmi2Status status, const char *message) {
    if (c->callbacks.logger)
        c->callbacks.logger(c->callbacks.componentEnvironment, c->m.name, status, "logStatusError", "%s", message);
}

static fmi2Status unknown_reference(Component *c) {
    say(c, fmi2Error, "unknown value reference");
    return fmi2Error;
}

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String categories[]) {
    (void)c; (void)on; (void)n; (void)categories;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible, fmi2Boolean logging) {
    Component *c;
    (void)resources; (void)visible; (void)logging;
    if (!functions || strcmp(guid, GUID) != 0) return NULL;
    c = (Component *)calloc(1, sizeof(Component));
    if (!c) return NULL;
    c->callbacks = *functions;
    c->cosimulation = type == fmi2CoSimulation;
    strncpy(c->m.name, name ? name : "", sizeof c->m.name - 1);
    reset_instance(&c->m);
    return c;
}

void fmi2FreeInstance(fmi2Component c) { free(c); }

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    ((Component *)c)->m.time = startTime;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    Component *comp = (Component *)c;
    const char *problem = model_check(&comp->m);
    if (problem) {
        say(comp, fmi2Error, problem);
        return fmi2Error;
    }
    if (comp->cosimulation)   /* a model exchange importer runs the event iteration itself */
        while (discrete_update(&comp->m)) {}
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

fmi2Status fmi2Reset(fmi2Component c) {
    reset_instance(&((Component *)c)->m);
    return fmi2OK;
}

#define ANSWER(c, failed) ((failed) ? unknown_reference(c) : fmi2OK)

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    return ANSWER((Component *)c, get_reals(&((Component *)c)->m, vr, n, value));
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    return ANSWER((Component *)c, set_reals(&((Component *)c)->m, vr, n, value));
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer value[]) {
    return ANSWER((Component *)c, get_integers(&((Component *)c)->m, vr, n, value));
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer value[]) {
    return ANSWER((Component *)c, set_integers(&((Component *)c)->m, vr, n, value));
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean value[]) {
    (void)vr; (void)value;
    return n ? unknown_reference((Component *)c) : fmi2OK;
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean value[]) {
    (void)vr; (void)value;
    return n ? unknown_reference((Component *)c) : fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String value[]) {
    (void)vr; (void)value;
    return n ? unknown_reference((Component *)c) : fmi2OK;
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String value[]) {
    (void)vr; (void)value;
    return n ? unknown_reference((Component *)c) : fmi2OK;
}

/* ---- Model Exchange */

fmi2Status fmi2EnterEventMode(fmi2Component c) { (void)c; return fmi2OK; }

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
    Update u = update_pass(&((Component *)c)->m);
    info->newDiscreteStatesNeeded = u.more ? fmi2True : fmi2False;
    info->terminateSimulation = u.terminate ? fmi2True : fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = u.values_changed ? fmi2True : fmi2False;
    info->nextEventTimeDefined = u.time_defined ? fmi2True : fmi2False;
    info->nextEventTime = u.next_time;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { (void)c; return fmi2OK; }

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation) {
    (void)noSetFMUStatePriorToCurrentPoint;
    *enterEventMode = model_completed(&((Component *)c)->m) ? fmi2True : fmi2False;
    *terminateSimulation = fmi2False;
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
    ((Component *)c)->m.time = time;
    return fmi2OK;
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
    return ANSWER((Component *)c, set_states(&((Component *)c)->m, x, nx));
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
    return ANSWER((Component *)c, get_derivatives(&((Component *)c)->m, dx, nx));
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t nz) {
    return ANSWER((Component *)c, get_indicators(&((Component *)c)->m, z, nz));
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    return ANSWER((Component *)c, get_states(&((Component *)c)->m, x, nx));
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominal[], size_t nx) {
    (void)c;
    get_nominals(nominal, nx);
    return fmi2OK;
}

/* ---- Co-Simulation */

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
    Component *comp = (Component *)c;
    (void)noSetFMUStatePriorToCurrentPoint;
    if (do_step(&comp->m, t, h)) {
        say(comp, fmi2Error, "doStep: the communication point is not the FMU's time");
        return fmi2Error;
    }
    return fmi2OK;
}
