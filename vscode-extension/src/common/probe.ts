/**
 * Checks that the interpreter can run onnxlens before we start the server with it, so a missing
 * package becomes a notification with a one-click fix instead of a server that dies at start.
 */
import { execFile } from "node:child_process";
import { ISOLATED, PIP_PACKAGE, SERVER_MODULE } from "./constants";

/**
 * Imports the server package (it never imports torch, so this is fast) and only looks for torch
 * with find_spec: importing torch takes seconds. Run isolated, as the server is: what it can
 * import is what the server can, and nothing of the workspace runs.
 */
export const PROBE_SCRIPT = `
import importlib.util, json, sys
info = {"python": sys.executable, "version": sys.version.split()[0], "onnxlens": None, "torch": False}
try:
    import ${SERVER_MODULE}
except Exception as error:
    info["onnxlens"] = "%s: %s" % (type(error).__name__, error)
try:
    info["torch"] = importlib.util.find_spec("torch") is not None
except Exception:
    pass
print(json.dumps(info))
`;

export interface ProbeResult {
  python: string; // sys.executable ("" when the interpreter did not run)
  version: string;
  onnxlensError: string | null; // why `import onnxlens.server` failed; null: it worked
  torch: boolean;
  runError?: string; // the interpreter could not run the probe at all
}

/** The probe's stdout, or why the interpreter could not produce it. */
export function parseProbeOutput(stdout: string, runError?: string): ProbeResult {
  const failed = (why: string): ProbeResult => ({ python: "", version: "", onnxlensError: null, torch: false, runError: why });
  if (runError) {
    return failed(runError);
  }
  const lastLine = stdout.trim().split(/\r?\n/).pop() ?? "";
  try {
    const info = JSON.parse(lastLine);
    return {
      python: String(info.python ?? ""),
      version: String(info.version ?? ""),
      onnxlensError: info.onnxlens === null || info.onnxlens === undefined ? null : String(info.onnxlens),
      torch: info.torch === true,
    };
  } catch {
    return failed(`unexpected output: ${stdout.trim().slice(0, 200) || "(nothing)"}`);
  }
}

export type ProbeVerdict =
  | { ok: true }
  | { ok: false; message: string; canInstall: boolean };

/** What to tell the user about a probe of `command`. */
export function judgeProbe(command: string, probe: ProbeResult): ProbeVerdict {
  if (probe.runError) {
    return {
      ok: false,
      canInstall: false,
      message: `ONNX Lens cannot run the Python interpreter ${command}: ${probe.runError}. Set onnxlens.interpreter or select an interpreter in the Python extension.`,
    };
  }
  const missing: string[] = [];
  if (probe.onnxlensError !== null) {
    missing.push(/ModuleNotFoundError: No module named 'onnxlens'/.test(probe.onnxlensError) ? "onnxlens" : `onnxlens (${probe.onnxlensError})`);
  }
  if (!probe.torch) {
    missing.push("torch");
  }
  if (missing.length === 0) {
    return { ok: true };
  }
  return {
    ok: false,
    canInstall: true,
    message: `ONNX Lens needs ${missing.join(" and ")} in the interpreter ${probe.python || command} (Python ${probe.version}). The server is not started.`,
  };
}

export function runProbe(command: string, cwd?: string, timeoutMs = 30_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(command, [ISOLATED, "-c", PROBE_SCRIPT], { cwd, timeout: timeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      if (error && !stdout) {
        const why = (error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : (stderr.trim() || error.message);
        resolve(parseProbeOutput("", why));
      } else {
        resolve(parseProbeOutput(stdout));
      }
    });
  });
}

export const INSTALL_ACTION = "Install onnxlens into this interpreter";

/** pip's arguments for the install action (the interpreter is the process: no shell quoting). */
export function pipInstallArgs(): string[] {
  return ["-m", "pip", "install", PIP_PACKAGE];
}
