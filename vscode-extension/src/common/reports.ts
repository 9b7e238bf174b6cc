/**
 * Export reports (markdown, opened in VS Code's preview beside the code) and exported .onnx
 * files (revealed in the Explorer).
 */
import * as vscode from "vscode";

/** Whether a window/showDocument target is a report we open in the markdown preview. */
export function isReport(uri: { scheme: string; path: string }): boolean {
  return uri.scheme === "file" && /\.(md|markdown)$/i.test(uri.path);
}

/**
 * The report among `candidates` to open when the user asks for "the last report": the one of
 * `target` if given and found, else the newest.
 */
export function pickReport<T extends { path: string; mtime: number }>(candidates: T[], target?: string): T | undefined {
  const byTarget = target ? candidates.filter((c) => c.path.split("/").pop() === `${target}.md`) : [];
  const pool = byTarget.length > 0 ? byTarget : candidates;
  return pool.reduce<T | undefined>((best, c) => (best === undefined || c.mtime > best.mtime ? c : best), undefined);
}

export class Reports {
  private last: vscode.Uri | undefined;

  /** window/showDocument from the server: reports go to the preview beside the editor. */
  async showDocument(uri: vscode.Uri): Promise<boolean> {
    if (!isReport(uri)) {
      return false;
    }
    await this.preview(uri);
    return true;
  }

  /**
   * "Open Last Report": the running server knows the current report of the target that finished
   * last (it answers with window/showDocument, which lands in `showDocument`); without a server,
   * the report seen last, else the newest report file in the workspace.
   */
  async openLast(lastTarget: string | undefined, askServer?: (target: string) => Promise<boolean>): Promise<void> {
    if (lastTarget && askServer && (await askServer(lastTarget))) {
      return;
    }
    const uri = this.last ?? (await this.findReport(lastTarget));
    if (!uri) {
      void vscode.window.showInformationMessage("ONNX Lens has not written an export report in this workspace yet.");
      return;
    }
    await this.preview(uri);
  }

  async revealOnnxFile(): Promise<void> {
    const files = await vscode.workspace.findFiles("**/*.onnx", "**/node_modules/**", 200);
    if (files.length === 0) {
      void vscode.window.showInformationMessage("No exported .onnx file in this workspace yet.");
      return;
    }
    const chosen =
      files.length === 1
        ? files[0]
        : (
            await vscode.window.showQuickPick(
              files.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
              { placeHolder: "Reveal which exported model?" },
            )
          )?.uri;
    if (chosen) {
      await vscode.commands.executeCommand("revealInExplorer", chosen);
    }
  }

  private async preview(uri: vscode.Uri): Promise<void> {
    this.last = uri;
    await vscode.commands.executeCommand("markdown.showPreviewToSide", uri);
  }

  /** Reports are written to <output-dir>/reports/<target>.md (output-dir: .onnxlens by default). */
  private async findReport(target: string | undefined): Promise<vscode.Uri | undefined> {
    const uris = await vscode.workspace.findFiles("**/reports/*.md", "**/node_modules/**", 200);
    const candidates = await Promise.all(
      uris.map(async (uri) => ({ path: uri.path, uri, mtime: (await vscode.workspace.fs.stat(uri)).mtime })),
    );
    return pickReport(candidates, target)?.uri;
  }
}
