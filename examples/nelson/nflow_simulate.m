function result = nflow_simulate(diagram, varargin)
%NFLOW_SIMULATE Run an nflow block diagram with nflow-compat; return what its recorders captured.
%   result = nflow_simulate(diagram) hands the diagram struct (what __nflow_simulate__ takes:
%   blocks, connections, sampleTime, duration, solver, variables, ...) to the nflow-sim
%   command and returns its result struct: status, time, workspace, scopes, events, stats,
%   warnings (docs/CONTRACT.md of nflow-compat, section 4). The diagram may also be given as
%   its JSON text (a char row).
%
%   A wrong diagram or a failed run raises an error whose identifier is nflow:<code>
%   (nflow:unknown_block_type, nflow:time_limit, ...); its message names the place in the
%   diagram (a JSON pointer) when there is one.
%
%   result = nflow_simulate(diagram, 'Command', cmd, 'BaseDir', dir, 'Limits', limits)
%     Command  how to start nflow-sim (default 'nflow-sim', found on the PATH; e.g. the full
%              path of a virtual environment's bin/nflow-sim)
%     BaseDir  the directory fileSource / fileSink paths are relative to (default pwd())
%     Limits   a cell of 'NAME=VALUE' strings, each passed as --limit NAME=VALUE
%              (e.g. {'max_seconds=60'})
%
%   Works in Nelson and in MATLAB: the diagram is jsonencode'd into a temporary file, run with
%   "nflow-sim run FILE -o RESULT --base-dir DIR --quiet", and the result file jsondecode'd.
%   jsondecode turns the recorded N x W rows into N x W matrices, time into a column, events
%   into a struct array and warnings into a cell of strings; a workspace or scope name that is
%   not a valid identifier is renamed as jsondecode renames struct fields.

  options = struct('Command', 'nflow-sim', 'BaseDir', pwd(), 'Limits', {{}});
  if mod(numel(varargin), 2) ~= 0
    error('nflow:bad_option', 'options come in name, value pairs');
  end
  for k = 1:2:numel(varargin)
    if ~ischar(varargin{k}) || ~isfield(options, varargin{k})
      error('nflow:bad_option', 'unknown option (known: Command, BaseDir, Limits)');
    end
    options.(varargin{k}) = varargin{k + 1};
  end

  if ischar(diagram)
    text = diagram;
  else
    text = jsonencode(diagram);
  end

  stem = tempname();
  files = struct('diagram', [stem, '_diagram.json'], 'result', [stem, '_result.json'], ...
                 'error', [stem, '_error.json'], 'log', [stem, '_log.txt']);
  fid = fopen(files.diagram, 'w', 'n', 'UTF-8');
  if fid < 0
    error('nflow:unwritable_input', 'cannot write the temporary file %s', files.diagram);
  end
  fprintf(fid, '%s', text);
  fclose(fid);

  limits = '';
  for k = 1:numel(options.Limits)
    limits = [limits, ' --limit ', options.Limits{k}];
  end
  % stdout carries the error line when the run fails; stderr (the same message, for a
  % terminal) goes to a file so that neither mixes with the other
  command = sprintf('%s run "%s" -o "%s" --base-dir "%s" --quiet%s > "%s" 2> "%s"', options.Command, ...
                    files.diagram, files.result, options.BaseDir, limits, files.error, files.log);
  status = system(command);

  if status == 0
    result = jsondecode(fileread(files.result));
    remove_files(files);
    return
  end
  reply = '';
  if isfile(files.error)
    reply = strtrim(fileread(files.error));
  end
  log = '';
  if isfile(files.log)
    log = strtrim(fileread(files.log));
  end
  remove_files(files);
  if isempty(reply)        % not nflow-sim's answer: it did not start, or was killed
    error('nflow:command_failed', 'nflow-sim did not answer (exit status %d): %s %s', status, command, log);
  end
  failure = jsondecode(reply);
  where = '';
  if isfield(failure.error, 'path') && ~isempty(failure.error.path)
    where = [' at ', failure.error.path];
  end
  error(['nflow:', failure.error.code], '%s%s: %s', failure.error.code, where, failure.error.message);
end


function remove_files(files)
  names = struct2cell(files);
  for k = 1:numel(names)
    if isfile(names{k})
      delete(names{k});
    end
  end
end
