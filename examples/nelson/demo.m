% demo.m: a diagram built in Nelson (or MATLAB), run by nflow-compat through nflow_simulate.
% diagram.json beside it is what jsonencode writes for this diagram.
% Run from this folder, with nflow-sim on the PATH (or pass 'Command', '/path/to/nflow-sim').

blocks = struct('id', {'drive', 'limit', 'log'}, ...
                'type', {'sine', 'saturation', 'toWorkspace'}, ...
                'inputs', {0, 1, 1}, 'outputs', {1, 1, 0}, ...
                'params', {struct('Amplitude', 2, 'Frequency', 0.5), ...
                           struct('LowerLimit', -1, 'UpperLimit', Inf), ...
                           struct('VariableName', 'y', 'SaveFormat', {{'Structure With Time'}})});
connections = struct('from', {'drive', 'limit'}, 'to', {'limit', 'log'}, ...
                     'fromIndex', {0, 0}, 'toIndex', {0, 0});
d = struct();
d.blocks = blocks;
d.connections = connections;
d.sampleTime = 0.01;
d.duration = 4;
d.solver = 'discrete';
d.variables = struct();

result = nflow_simulate(d, 'Limits', {'max_seconds=60'});
y = result.workspace.y.signals.values;     % 401 x 1: the sine, clipped below at -1
t = result.workspace.y.time;
disp([min(y), max(y)])                     % -1 2

try
  d.blocks(2).type = 'saturaton';
  nflow_simulate(d);
catch err
  disp(err.identifier)                     % nflow:unknown_block_type
  disp(err.message)                        % ... at /blocks/1/type: unknown block type 'saturaton' ...
end
