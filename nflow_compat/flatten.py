"""nflow's ``subsystem`` block: nested diagrams with external ports.

``flatten``, called by ``diagram.parse``: every subsystem is replaced by the
blocks of its nested diagram, with qualified ids (``"sub/inner"``; a forEach copy is
``"sub[2]/inner"``) and JSON pointers into the nested params
(``/blocks/3/params/subsystem/blocks/0``), so errors, warnings, events and recorders
name them. The subsystem's ports disappear: a connection into input ``k`` is rewired to
every inner block the k-th external input port feeds, and a connection from output ``j``
starts where the j-th external output port is fed from. Continuous states, solver
events, algebraic-loop detection and physical islands then work unchanged.

* ``externalInputs`` / ``externalOutputs``: lists of inner block ids, port k = entry k.
  An entry is ``{"id": "in1", "name": "u"}`` (the editor's shape), a bare id, or a
  ``{"name": ...}`` naming a port block by its GotoTag. They may sit in the subsystem's
  params or in the nested diagram (``params.subsystem.externalInputs``); when both are
  missing, the inner ``labelSource`` / ``labelSink`` blocks with ``isExternalPort`` true
  are the ports, ordered by their layout (y, then x, then declaration order).
* An input port block (a labelSource) is removed: it only names the port (an unconnected
  subsystem input is ground: a constant 0 takes the port block's id). An output port that
  is a labelSink (or any block without outputs) stands for the signal entering it; any
  other block for its output 0.
* GotoTags of inner labelSource/labelSink blocks are local to their subsystem (Simulink's
  default "local" tag visibility): an inner tag ``x`` becomes ``sub/x``.
* ``forEach: {"numIterations": N, "partition": [ports]}`` (0-based port indices, like
  ``toIndex``): the body is copied N times, each copy keeps its own state; a partitioned
  input of width N*w is split by a demux, copy i getting slice i; other inputs are
  broadcast; each output is the mux of the copies' outputs (width N*w_out).
* ``controlPort`` (``"action"``, ``"enable"``, ``"functionCall"``, ``"forIterator"``,
  ``"whileIterator"``, or ``{"kind": ..., options}``): the body becomes an *execution
  group*. The control signal is wired to the input port right after the data ports
  (``toIndex`` = number of external inputs), or to a connection with
  ``"toPort": "control"``.

GotoTags: a labelSource gets one more input than the diagram declares, its route: a
plain wire from the signal entering the labelSink with its tag (``route_labels``), so
widths, complex types and the run see an ordinary wire (the handler copies it in OUTPUT:
nflow's one-step lag when the signal is computed later, and no algebraic loop).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from .errors import DiagramError, did_you_mean
from .normalize import MAX_PORTS, as_list, is_physical, number, parse_block, port_index

_KINDS = {"action": "action", "ifaction": "action", "switchcaseaction": "action", "actionport": "action",
          "enable": "enable", "enabled": "enable", "enableport": "enable",
          "functioncall": "functionCall", "fcn": "functionCall", "fcncall": "functionCall",
          "foriterator": "forIterator", "for": "forIterator",
          "whileiterator": "whileIterator", "while": "whileIterator", "dowhile": "whileIterator",
          "none": None}
_UNSUPPORTED_KINDS = ("trigger", "triggered", "triggerport", "enabledandtriggered", "reset", "resettable")
CANONICAL_KINDS = ("action", "enable", "functionCall", "forIterator", "whileIterator")
MAX_ITERATIONS = 1_000_000          # per step, for and while iterators
DEFAULT_MAX_ITERATIONS = 100        # while iterator safety cap when none is given
_CONTROL = "control"


@dataclass(eq=False)
class Group:
    id: str
    path: str
    kind: str
    parent: "Group | None"
    count: int = 1                   # forIterator passes / whileIterator cap / function calls
    members: list = field(default_factory=list)    # block ids directly in the group
    children: list = field(default_factory=list)   # nested groups
    control: tuple | None = None     # (block id, fromIndex) driving the control port
    control_path: str = ""


@dataclass
class Partition:
    demux: str      # id of the demux splitting the input
    sub: str
    port: int
    n: int
    path: str


@dataclass
class Structure:
    groups: list        # top-level groups (nested ones are their children)
    partitions: list
    grounds: set = field(default_factory=set)   # ids of the constant-0 blocks grounding unconnected inputs


def _norm_id(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}"
    return value if isinstance(value, str) and value else None


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("on", "true", "yes", "1")
    return bool(value) if isinstance(value, (bool, int, float)) else False


def _paths(value, base: str):
    """The items of a blocks/connections list and their JSON pointers (``base`` is one)."""
    items = as_list(value)
    return items, ([base] * len(items) if isinstance(value, dict) else [f"{base}/{i}" for i in range(len(items))])


def flatten(raw, raw_blocks, paths, variables, types, limits, warnings):
    """The blocks and connections of a diagram whose subsystems are expanded, with their
    JSON pointers, and the Structure (None when no forEach / conditional subsystem)."""
    conns, cpaths = _paths(raw.get("connections"), "/connections")
    f = _Flattener(variables, types, limits, warnings)
    f.level(raw_blocks, paths, conns, cpaths, prefix="", depth=0, group=None, owner=None,
            in_ports={}, out_ports={})
    blocks, bpaths, conns, cpaths = f.finish()
    if len(blocks) > limits.max_blocks:
        raise DiagramError("too_many_blocks", f"{len(blocks)} blocks once the subsystems are expanded "
                           f"(limit {limits.max_blocks})", path="/blocks")
    structure = Structure(f.groups, f.partitions, f.grounds) if (f.groups or f.partitions) else None
    return blocks, bpaths, conns, cpaths, structure


class _Flattener:
    def __init__(self, variables, types, limits, warnings):
        self.variables, self.types, self.limits, self.warnings = variables, types, limits, warnings
        self.blocks, self.conns, self.pending = [], [], []
        self.drives, self.outs, self.controls = {}, {}, {}   # (sub, port) -> source ref
        self.n_in, self.n_out, self.kind = {}, {}, {}
        self.groups, self.partitions = [], []
        self.group_of = {}     # subsystem id -> Group
        self.port_blocks = {}  # (subsystem id, input k) -> (qualified id, path) of the removed port block
        self.grounds = set()
        self.count = 0

    # -- one diagram level (the top one or a subsystem body)
    def level(self, raws, paths, conns, cpaths, *, prefix, depth, group, owner, in_ports, out_ports):
        local = {}
        for raw, path in zip(raws, paths):
            bid = _norm_id(raw["id"])
            if bid in local:
                raise DiagramError("duplicate_id", f"block id {prefix + bid!r} is used twice", path=path + "/id",
                                   block=prefix + bid)
            local[bid] = raw
        subs = {}
        for raw, path in zip(raws, paths):
            bid = _norm_id(raw["id"])
            qid = prefix + bid
            if bid in in_ports:       # an input port only names the port; what drives the port replaces it
                if bid in out_ports:
                    self.outs[(owner, out_ports[bid])] = ("I", owner, in_ports[bid])
                continue
            if raw.get("type") == "subsystem":
                subs[bid] = qid
                self.subsystem(raw, path, qid, depth + 1, group)
                if bid in out_ports:
                    self.outs[(owner, out_ports[bid])] = ("O", qid, 0)
                continue
            self._add(self._rewrite(raw, qid, prefix, local), path, group)
            if bid in out_ports and not self._port_reads_input(raw):
                self.outs[(owner, out_ports[bid])] = ("B", qid, 0)
        for conn, cpath in zip(conns, cpaths):
            self._connection(conn, cpath, prefix, local, subs, owner, in_ports, out_ports)

    def _connection(self, conn, cpath, prefix, local, subs, owner, in_ports, out_ports):
        src_id, dst_id = _norm_id(conn.get("from")), _norm_id(conn.get("to"))

        def qual(bid, raw_value):
            return raw_value if bid is None else prefix + bid

        if is_physical(conn):
            for bid, key in ((src_id, "from"), (dst_id, "to")):
                if bid in subs or bid in in_ports:
                    raise DiagramError("unsupported_connection", "a physical (pin) connection cannot reach a "
                                       f"subsystem's port ({prefix + bid!r}); put the physical blocks it joins in "
                                       "the same diagram level", path=cpath + "/" + key, block=prefix + bid)
            self.conns.append((dict(conn, **{"from": qual(src_id, conn.get("from")),
                                             "to": qual(dst_id, conn.get("to"))}), cpath))
            return
        if src_id in in_ports:
            port = port_index(conn.get("fromIndex"), {"path": cpath + "/fromIndex"}, "'fromIndex'")
            if port != 0:
                raise DiagramError("port_out_of_range", f"input port block {prefix + src_id!r} has one output; "
                                   f"fromIndex {port} is out of range", path=cpath + "/fromIndex")
            src = ("I", owner, in_ports[src_id])
        elif src_id in subs:
            q = subs[src_id]
            port = port_index(conn.get("fromIndex"), {"path": cpath + "/fromIndex", "block": q}, "'fromIndex'")
            if not 0 <= port < self.n_out[q]:
                raise DiagramError("port_out_of_range", f"subsystem {q!r} has {self.n_out[q]} external output(s); "
                                   f"fromIndex {port} is out of range (ports are 0-based)",
                                   path=cpath + "/fromIndex", block=q)
            src = ("O", q, port)
        else:
            src = ("B", qual(src_id, conn.get("from")), conn.get("fromIndex"))
        if dst_id in subs:
            q = subs[dst_id]
            port = self._sub_port(conn, cpath, q)
            table, key = (self.controls, q) if port == _CONTROL else (self.drives, (q, port))
            if key in table:
                raise DiagramError("input_driven_twice", f"{'the control port' if port == _CONTROL else f'input {port}'}"
                                   f" of subsystem {q!r} is driven by two connections", path=cpath, block=q)
            table[key] = (src, cpath) if port == _CONTROL else src
            return
        if dst_id in in_ports:
            raise DiagramError("bad_external_port", f"block {prefix + dst_id!r} is an external input port of "
                               f"subsystem {owner!r}; it cannot be driven from inside", path=cpath + "/to",
                               block=prefix + dst_id)
        if dst_id in out_ports and self._port_reads_input(local[dst_id]):
            if port_index(conn.get("toIndex"), {"path": cpath + "/toIndex"}, "'toIndex'") == 0:
                self.outs[(owner, out_ports[dst_id])] = src
        self.pending.append((src, qual(dst_id, conn.get("to")), conn.get("toIndex"), cpath))

    def _sub_port(self, conn, cpath, q):
        n, kind = self.n_in[q], self.kind[q]
        named = conn.get("toPort")
        if isinstance(named, str) and named.strip():
            key = re.sub(r"[\s_\-]", "", named).lower()
            if key == _CONTROL or _KINDS.get(key):
                if kind is None:
                    raise DiagramError("bad_external_port", f"subsystem {q!r} has no controlPort; "
                                       f"toPort {named!r} names none", path=cpath + "/toPort", block=q)
                return _CONTROL
            raise DiagramError("bad_external_port", f"toPort {named!r}: only 'control' names a subsystem port "
                               "(data ports are toIndex 0, 1, ...)", path=cpath + "/toPort", block=q)
        port = port_index(conn.get("toIndex"), {"path": cpath + "/toIndex", "block": q}, "'toIndex'")
        if 0 <= port < n:
            return port
        if port == n and kind in ("action", "enable", "functionCall"):
            return _CONTROL
        ctl = (f" and its control port is toIndex {n}" if kind in ("action", "enable", "functionCall") else "")
        raise DiagramError("port_out_of_range", f"subsystem {q!r} has {n} external input(s){ctl}; toIndex {port} "
                           "is out of range (ports are 0-based)", path=cpath + "/toIndex", block=q)

    def _port_reads_input(self, raw) -> bool:
        """An output port block that stands for the signal entering it (a labelSink, or
        any block without outputs), rather than for its own output 0."""
        btype = raw.get("type")
        if btype == "labelSink":
            return True
        bt = self.types.get(btype)
        n = raw.get("outputs")
        n = n if isinstance(n, (int, float)) and not isinstance(n, bool) else (bt.outputs if bt else 1)
        return n == 0

    def _add(self, raw, path, group):
        self.count += 1
        if self.count > self.limits.max_blocks:
            raise DiagramError("too_many_blocks", f"more than {self.limits.max_blocks} blocks once the subsystems "
                               "are expanded", path=path)
        self.blocks.append((raw, path))
        if group is not None:
            group.members.append(raw["id"])

    def _rewrite(self, raw, qid, prefix, local) -> dict:
        """An inner block with its qualified id and its GotoTag local to the subsystem; a
        dashboard Binding path into a subsystem (``["sub", "inner"]``, or an inner id
        seen from inside) becomes the qualified id. Top-level blocks keep everything else."""
        out = dict(raw, id=qid) if prefix else raw
        params = raw.get("params")
        btype = raw.get("type")
        if prefix and btype in ("labelSource", "labelSink") and (params is None or params == []
                                                                   or isinstance(params, dict)):
            p = dict(params or {})
            name = p.pop("name", None)            # the editor's older key for the tag
            if btype == "labelSink":
                p.pop("isExternalPort", None)     # a port marker; the block itself is an ordinary sink
            tag = p.get("GotoTag", name if isinstance(name, str) else self.types[btype].params["GotoTag"].default)
            if isinstance(tag, str):
                p["GotoTag"] = prefix + tag
            out["params"] = p
        elif isinstance(params, dict) and isinstance(params.get("Binding"), dict):
            binding = params["Binding"]
            path = binding.get("blockPath")
            joined = None
            if isinstance(path, list):
                parts = [x for x in path if isinstance(x, str) and x]
                path = joined = "/".join(parts) if parts else None
            if isinstance(path, str) and (joined is not None or prefix) and path.split("/")[0] in local:
                out = dict(out, params=dict(params, Binding=dict(binding, blockPath=prefix + path)))
        return out

    # -- one subsystem block
    def subsystem(self, raw, path, qid, depth, group):
        limit = self.limits.max_subsystem_depth
        if depth > limit:
            raise DiagramError("subsystem_too_deep", f"subsystem {qid!r} is nested {depth} levels deep (limit "
                               f"{limit}, Limits.max_subsystem_depth)", path=path, block=qid)
        blk = parse_block(dict(raw, id=qid), 0, self.variables, path, self.types, self.warnings)
        params = blk.params
        body = params.get("subsystem")
        bpath = path + "/params/subsystem"
        if not isinstance(body, dict):    # null, [] or "": none (the schema allows no other)
            body = {}
        inner, ipaths = _paths(body.get("blocks"), bpath + "/blocks")
        conns, cpaths = _paths(body.get("connections"), bpath + "/connections")
        ids = {}
        for i, b in enumerate(inner):
            ids.setdefault(_norm_id(b["id"]), i)
        ins = self._ports(params, body, "externalInputs", inner, ids, path, qid, "labelSource")
        outs = self._ports(params, body, "externalOutputs", inner, ids, path, qid, "labelSink")
        for k, bid in enumerate(ins):
            if inner[ids[bid]].get("type") == "subsystem":
                raise DiagramError("bad_external_port", f"subsystem {qid!r}: externalInputs[{k}] names a "
                                   f"subsystem ({bid!r}); an input port is a labelSource", block=qid,
                                   path=path + "/params/externalInputs")
        for b, bp in zip(inner, ipaths):
            if (b["type"] == "labelSource" and _norm_id(b["id"]) not in ins
                    and isinstance(b.get("params"), dict) and _truthy(b["params"].get("isExternalPort"))):
                self.warnings.append(f"block {qid + '/' + str(_norm_id(b.get('id')))!r}: marked isExternalPort but "
                                     f"not listed in the externalInputs of subsystem {qid!r}; it outputs 0")
        kind, options = self._control(params, path, qid)
        each = self._for_each(params, path, qid, len(ins))
        self.n_in[qid], self.n_out[qid], self.kind[qid] = len(ins), len(outs), kind
        in_ports = {bid: k for k, bid in enumerate(ins)}
        out_ports = {bid: j for j, bid in enumerate(outs)}
        for k, bid in enumerate(ins):
            self.port_blocks[(qid, k)] = (f"{qid}/{bid}", ipaths[ids[bid]])
        if each is not None:
            if kind is not None:
                raise DiagramError("unsupported_subsystem", f"subsystem {qid!r}: forEach together with a "
                                   f"{kind} controlPort is not supported", path=path + "/params/controlPort",
                                   block=qid)
            self._replicate(each, inner, ipaths, conns, cpaths, qid, path, depth, group, ins, outs,
                            in_ports, out_ports)
            return
        if kind is not None:
            g = Group(qid, path, kind, group, count=self._count(kind, options, params, path, qid))
            (group.children if group is not None else self.groups).append(g)
            self.group_of[qid] = g
            group = g
        self.level(inner, ipaths, conns, cpaths, prefix=qid + "/", depth=depth, group=group, owner=qid,
                   in_ports=in_ports, out_ports=out_ports)

    def _replicate(self, each, inner, ipaths, conns, cpaths, qid, path, depth, group, ins, outs,
                   in_ports, out_ports):
        n, partition = each
        if len(inner) * n > self.limits.max_blocks:
            raise DiagramError("too_many_blocks", f"subsystem {qid!r}: forEach makes {n} copies of "
                               f"{len(inner)} blocks (limit {self.limits.max_blocks} blocks)",
                               path=path + "/params/forEach", block=qid)
        fpath = path + "/params/forEach"
        splits = {}
        for k in sorted(partition):
            did = f"{qid}/forEach.in{k}"
            self._add({"id": did, "type": "demux", "inputs": 1, "outputs": n, "params": {}}, fpath, group)
            self.pending.append((("I", qid, k), did, 0, fpath))
            self.partitions.append(Partition(did, qid, k, n, path))
            splits[k] = did
        for i in range(n):
            cq = f"{qid}[{i + 1}]"
            for k in range(len(ins)):
                self.drives[(cq, k)] = ("B", splits[k], i) if k in splits else ("I", qid, k)
            self.level(inner, ipaths, conns, cpaths, prefix=cq + "/", depth=depth, group=group, owner=cq,
                       in_ports=in_ports, out_ports=out_ports)
        for j in range(len(outs)):
            mid = f"{qid}/forEach.out{j}"
            self._add({"id": mid, "type": "mux", "inputs": n, "outputs": 1, "params": {}}, fpath, group)
            for i in range(n):
                self.pending.append((("O", f"{qid}[{i + 1}]", j), mid, i, fpath))
            self.outs[(qid, j)] = ("B", mid, 0)

    def _ports(self, params, body, key, inner, ids, path, qid, port_type) -> list:
        where = path + "/params/" + key
        top = self._port_ids(params.get(key), inner, ids, where, qid, port_type)
        nested = self._port_ids(body.get(key), inner, ids, path + "/params/subsystem/" + key, qid, port_type)
        if top and nested and top != nested:
            raise DiagramError("bad_external_port", f"subsystem {qid!r}: params.{key} {top} and "
                               f"params.subsystem.{key} {nested} disagree", path=where, block=qid)
        found = top or nested
        if not found and not params.get(key) and not body.get(key):
            # no list: the inner port blocks, in layout order (the editor's rule)
            marked = [(i, b) for i, b in enumerate(inner) if b["type"] == port_type
                      and isinstance(b.get("params"), dict) and _truthy(b["params"].get("isExternalPort"))]

            def place(item):
                i, b = item
                coords = [b.get(c) for c in ("y", "x")]
                return tuple(c if isinstance(c, (int, float)) and not isinstance(c, bool) else 0 for c in coords) + (i,)
            found = [_norm_id(b.get("id")) for _, b in sorted(marked, key=place) if _norm_id(b.get("id"))]
        if len(set(found)) != len(found):
            raise DiagramError("bad_external_port", f"subsystem {qid!r}: {key} lists a block twice: {found}",
                               path=where, block=qid)
        return found

    def _port_ids(self, value, inner, ids, where, qid, port_type) -> list:
        if value is None or value == [] or value == "":
            return []
        entries = value if isinstance(value, list) else [value]
        out = []
        for k, entry in enumerate(entries):
            epath = f"{where}/{k}" if isinstance(value, list) else where
            bid = _norm_id(entry)
            if isinstance(entry, dict):
                bid = _norm_id(entry.get("id"))
                if bid is None and isinstance(entry.get("name"), str):
                    bid = self._port_by_tag(entry["name"], inner, port_type)
            if bid is None:
                raise DiagramError("bad_external_port", f"subsystem {qid!r}: external port entry {entry!r} must be "
                                   "{\"id\": \"<inner block id>\", \"name\": ...} or an inner block id", path=epath,
                                   block=qid)
            if bid not in ids:
                raise DiagramError("bad_external_port", f"subsystem {qid!r}: external port {k} names block {bid!r}, "
                                   "which is not in the subsystem" + did_you_mean(bid, ids), path=epath, block=qid)
            out.append(bid)
        return out

    @staticmethod
    def _port_by_tag(name, inner, port_type):
        for b in inner:
            if b["type"] == port_type and isinstance(b.get("params"), dict):
                if name in (b["params"].get("GotoTag"), b["params"].get("name")):
                    return _norm_id(b.get("id"))
        return None

    def _control(self, params, path, qid):
        value = params.get("controlPort")
        where = path + "/params/controlPort"
        if value is None or value == "" or value == [] or value == {}:
            return None, {}
        options = {}
        if isinstance(value, dict):
            options = value
            value = value.get("kind", value.get("type"))
            where += "/kind"
        if not isinstance(value, str):
            raise DiagramError("param_type", f"subsystem {qid!r}: controlPort must be one of {list(CANONICAL_KINDS)} "
                               "or {\"kind\": ..., ...}", path=where, block=qid, param="controlPort")
        key = re.sub(r"[\s_\-]", "", value).lower()
        if key in _UNSUPPORTED_KINDS:
            raise DiagramError("unsupported_subsystem", f"subsystem {qid!r}: controlPort {value!r} is not supported "
                               f"(supported: {', '.join(CANONICAL_KINDS)})", path=where, block=qid,
                               param="controlPort")
        if key not in _KINDS:
            raise DiagramError("param_value", f"subsystem {qid!r}: unknown controlPort kind {value!r} (known: "
                               f"{', '.join(CANONICAL_KINDS)})" + did_you_mean(value, CANONICAL_KINDS),
                               path=where, block=qid, param="controlPort")
        return _KINDS[key], options

    def _count(self, kind, options, params, path, qid) -> int:
        """Passes per step of a for iterator, or the cap of a while iterator."""
        if kind == "forIterator":
            names, default, low = ("NumberOfIterations", "IterationLimit", "numIterations", "iterations"), 1, 0
        elif kind == "whileIterator":
            names, default, low = ("MaxIterations", "maxIterations", "MaxIters"), DEFAULT_MAX_ITERATIONS, 1
        else:
            return 1
        for name in names:
            if options.get(name) is not None:
                value, where = options[name], path + "/params/controlPort/" + name
                break
        else:
            name = names[0]
            value, where = params.get(name, default), path + "/params/" + name
        n = number(value, self.variables, where={"path": where, "block": qid}, what=name)
        if not (math.isfinite(n) and n == int(n) and low <= n <= MAX_ITERATIONS):
            raise DiagramError("param_range", f"subsystem {qid!r}: {name} must be a whole number from {low} to "
                               f"{MAX_ITERATIONS}, got {n:g}", path=where, block=qid, param=name)
        return int(n)

    def _for_each(self, params, path, qid, n_inputs):
        spec = params.get("forEach")
        where = path + "/params/forEach"
        if spec is None or spec == [] or spec == {} or spec == "":
            return None
        if isinstance(spec, list) and len(spec) == 1 and isinstance(spec[0], dict):
            spec = spec[0]
        if not isinstance(spec, dict):
            raise DiagramError("param_type", f"subsystem {qid!r}: forEach must be {{\"numIterations\": N, "
                               "\"partition\": [ports]}", path=where, block=qid, param="forEach")
        raw_n = spec.get("numIterations", spec.get("NumIterations"))
        if raw_n is None:
            raise DiagramError("param_value", f"subsystem {qid!r}: forEach needs numIterations", path=where,
                               block=qid, param="forEach")
        n = number(raw_n, self.variables, where={"path": where + "/numIterations", "block": qid},
                    what="numIterations")
        if not (math.isfinite(n) and n == int(n) and 1 <= n <= MAX_PORTS):
            raise DiagramError("param_range", f"subsystem {qid!r}: forEach numIterations must be a whole number "
                               f"from 1 to {MAX_PORTS}, got {n:g}", path=where + "/numIterations", block=qid,
                               param="forEach")
        raw_p = spec.get("partition", spec.get("Partition", []))
        raw_p = [] if raw_p is None else raw_p if isinstance(raw_p, list) else [raw_p]
        ports = set()
        for k, p in enumerate(raw_p):
            port = port_index(p, {"path": f"{where}/partition/{k}", "block": qid}, "a partition port")
            if not 0 <= port < n_inputs:
                raise DiagramError("bad_external_port", f"subsystem {qid!r}: forEach partitions input {port}, but "
                                   f"the subsystem has {n_inputs} external input(s) (ports are 0-based)",
                                   path=f"{where}/partition/{k}", block=qid, param="forEach")
            ports.add(port)
        return int(n), ports

    # -- resolution of the port references
    def _resolve(self, ref, path):
        """The block output a port reference comes to. An unconnected subsystem input is
        ground (a constant 0 standing where its port block was, as Simulink grounds an
        unconnected Inport); an output port fed by nothing gives None (unconnected)."""
        seen, last_input = set(), None
        while ref is not None and ref[0] != "B":
            if ref in seen:
                raise DiagramError("subsystem_wire_loop", "subsystem ports are wired into a loop with no block in it "
                                   f"(around subsystem {ref[1]!r})", path=path, block=ref[1])
            seen.add(ref)
            if ref[0] == "I":
                last_input = (ref[1], ref[2])
            ref = (self.drives if ref[0] == "I" else self.outs).get((ref[1], ref[2]))
        if ref is None and last_input in self.port_blocks:
            pid, ppath = self.port_blocks[last_input]
            if pid not in self.grounds:
                self.grounds.add(pid)
                self._add({"id": pid, "type": "constant", "params": {"Value": 0}}, ppath, None)
            ref = ("B", pid, 0)
        return ref

    def finish(self):
        conns = list(self.conns)
        for src, dst, to_index, cpath in self.pending:
            ref = self._resolve(src, cpath)
            if ref is not None:   # an unconnected subsystem port leaves the inner input unconnected
                conns.append(({"from": ref[1], "fromIndex": ref[2], "to": dst, "toIndex": to_index}, cpath))
        for qid, (src, cpath) in list(self.controls.items()):
            ref = self._resolve(src, cpath)
            g = self.group_of[qid]
            g.control_path = cpath
            if ref is not None:
                g.control = (ref[1], port_index(ref[2], {"path": cpath + "/fromIndex"}, "'fromIndex'"))
        blocks = [b for b, _ in self.blocks]
        bpaths = [p for _, p in self.blocks]
        return blocks, bpaths, [c for c, _ in conns], [p for _, p in conns]


# ----------------------------------------------------------------------------- goto / from

# Parameters that decide where a goto/from route goes: changing one re-wires the diagram
# (a sweep parses the diagram again for them).
ROUTING_PARAMS = frozenset({("labelSource", "GotoTag"), ("labelSource", "isExternalPort"), ("labelSink", "GotoTag")})


def route_labels(blocks: list, wires: list, warnings: list):
    """goto/from as wires. Every labelSource but a subsystem port marker (isExternalPort)
    gets one input more than it declares, its route, fed from what drives the labelSink
    with its GotoTag (of two sinks with one tag the later one, as nflow reads them). No
    sink, an empty tag or an unconnected sink leaves the route unconnected (the block
    outputs 0), with a warning. Returns the blocks (the routed labelSources replaced) and
    the routes as ``(src, src_port, dst, dst_port, path)``."""
    driver = {(w.dst, w.dst_port): (w.src, w.src_port) for w in wires}
    sinks, shared = {}, {}
    for b in blocks:
        if b.type.type == "labelSink":
            tag = b.params["GotoTag"]
            if tag in sinks:
                shared.setdefault(tag, [sinks[tag].id]).append(b.id)
            sinks[tag] = b
    blocks, routes = list(blocks), []
    for b in blocks:
        if b.type.type == "labelSink" and b.id == shared.get(b.params["GotoTag"], [None])[-1]:
            warnings.append(f"labelSink blocks {', '.join(map(repr, shared[b.params['GotoTag']]))} share GotoTag "
                            f"{b.params['GotoTag']!r}; labelSource blocks read the last one, {b.id!r}")
        if b.type.type != "labelSource" or b.params.get("isExternalPort"):
            continue
        tag = b.params["GotoTag"]
        sink = sinks.get(tag) if tag else None
        source = None if sink is None else driver.get((sink.index, 0))
        if sink is None:
            warnings.append(f"labelSource {b.id!r}: no labelSink has GotoTag {tag!r}; it outputs 0" if tag else
                            f"labelSource {b.id!r}: empty GotoTag; it outputs 0")
        elif source is None:
            warnings.append(f"labelSource {b.id!r}: labelSink {sink.id!r} (GotoTag {tag!r}) has no input; "
                            "it outputs 0")
        else:
            routes.append((*source, b.index, b.inputs, b.where("GotoTag")["path"]))
        blocks[b.index] = replace(b, inputs=b.inputs + 1)
    return blocks, routes
