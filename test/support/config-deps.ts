/** What loadConfig reads, for unit tests: the root dir `/app` and files from a map. */

/** loadConfig's dependencies with `files` as the only readable files; reading another throws, as a missing file does. */
export const configDeps = (files: Record<string, string> = {}) => ({
  rootDir: '/app',
  readFile: (path: string) => {
    const text = files[path];
    if (text === undefined) throw new Error(`cannot read ${path}`);
    return text;
  },
});
