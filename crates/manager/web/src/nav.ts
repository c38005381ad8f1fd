// Client-side navigation, shared by the router (main.ts) and the pages.

let renderFn: () => Promise<void> = async () => {};
let loginNotice = "";

export function setRenderer(f: () => Promise<void>): void {
  renderFn = f;
}

export function navigate(path: string, replaceState = false): void {
  if (replaceState) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  void renderFn();
}

/** Leaves a notice for the login page (e.g. "your session expired"). */
export function setLoginNotice(text: string): void {
  loginNotice = text;
}

export function takeLoginNotice(): string {
  const n = loginNotice;
  loginNotice = "";
  return n;
}
