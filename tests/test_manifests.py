"""The manifests' product extensions (nflow_compat.manifests): here ``outputUnits``, the
physical unit of each output port of the blocks whose outputs have one."""
from __future__ import annotations

from nflow_compat.manifests import block_types, libraries

# SI units (and their products) the sensors of the acausal libraries output
UNITS = {"m", "m/s", "rad", "rad/s", "V", "A", "K", "W"}


def test_every_acausal_sensor_with_a_fixed_quantity_names_its_unit():
    types = block_types()
    sensors = [t for t in types.values() if t.acausal and t.outputs]
    named = {t.type for t in sensors if t.output_units}
    # the planar position / velocity / acceleration sensors output the quantity their 'axis' picks (m or rad)
    assert {t.type for t in sensors} - named == {"PlanarPositionSensor", "PlanarVelocitySensor",
                                                "PlanarAccelerationSensor", "PlanarRelPositionSensor"}
    for t in sensors:
        if t.output_units:
            assert len(t.output_units) == t.outputs and set(t.output_units) <= UNITS, t.type
    assert (types["SpeedSensor"].output_unit(0), types["RotSpeedSensor"].output_unit(0),
            types["CurrentSensor"].output_unit(0), types["TemperatureSensor"].output_unit(0)) == ("m/s", "rad/s", "A", "K")
    assert types["gain"].output_unit(0) == "" and types["SpeedSensor"].output_unit(3) == ""


def test_output_units_follow_the_outputs_key_in_the_entries():
    for manifest in libraries().values():
        for entry in manifest["blocks"]:
            if "outputUnits" in entry:
                keys = list(entry)
                assert keys[keys.index("outputs") + 1] == "outputUnits", entry["type"]
