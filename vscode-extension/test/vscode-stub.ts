/**
 * A small stand-in for the `vscode` module, which only exists inside VS Code. esbuild aliases
 * `vscode` to this file when it builds the unit tests (esbuild.mjs --tests). It implements the
 * few APIs the tested modules call, records what they did, and lets a test set the
 * configuration and the installed extensions (`stub`).
 */

export const stub = {
  configuration: {} as Record<string, unknown>, // "onnxlens.jobs" -> 4
  extensions: {} as Record<string, { isActive: boolean; exports: unknown; activate(): Promise<unknown> }>,
  outputChannels: [] as FakeOutputChannel[],
  statusBarItems: [] as FakeStatusBarItem[],
  executedCommands: [] as { command: string; args: unknown[] }[],
  reset(): void {
    this.configuration = {};
    this.extensions = {};
    this.outputChannels = [];
    this.statusBarItems = [];
    this.executedCommands = [];
  },
};

export class FakeOutputChannel {
  lines: string[] = [];
  shown = false;
  constructor(public name: string) {}
  appendLine(line: string): void {
    this.lines.push(line);
  }
  append(text: string): void {
    this.lines.push(text);
  }
  show(): void {
    this.shown = true;
  }
  clear(): void {
    this.lines = [];
  }
  dispose(): void {}
}

export class FakeStatusBarItem {
  text = "";
  tooltip: unknown = undefined;
  name: string | undefined;
  command: unknown = undefined;
  backgroundColor: unknown = undefined;
  visible = false;
  constructor(public id: string) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {}
}

export class ThemeColor {
  constructor(public id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class Uri {
  private constructor(
    public scheme: string,
    public path: string,
  ) {}
  static file(fsPath: string): Uri {
    return new Uri("file", fsPath);
  }
  static parse(value: string): Uri {
    const match = /^([a-z][a-z0-9+.-]*):\/\/[^/]*(.*)$/i.exec(value);
    return match ? new Uri(match[1], decodeURIComponent(match[2])) : new Uri("file", value);
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export const window = {
  createOutputChannel(name: string): FakeOutputChannel {
    const channel = new FakeOutputChannel(name);
    stub.outputChannels.push(channel);
    return channel;
  },
  createStatusBarItem(id: string): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id);
    stub.statusBarItems.push(item);
    return item;
  },
};

export const workspace = {
  getConfiguration(section: string) {
    return {
      get<T>(key: string): T | undefined {
        return stub.configuration[`${section}.${key}`] as T | undefined;
      },
    };
  },
};

export const extensions = {
  getExtension(id: string) {
    return stub.extensions[id];
  },
};

export const commands = {
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    stub.executedCommands.push({ command, args });
    return undefined;
  },
};
