//! A real browser for the tests of the fleet page: Debian's `chromium` driven headless by
//! Playwright (`playwright-core` from the npm registry, which drives a browser it is given and
//! downloads none). scripts/setup.sh installs the pinned package into the tools cache and
//! exports `RECMAN_PLAYWRIGHT`; a machine without it or without chromium fails the test with
//! the hint, never skips it.

use std::path::PathBuf;

const INSTALL_HINT: &str = "scripts/setup.sh installs both (Debian's chromium package, and npm's playwright-core into /var/cache/recman-tools/playwright); or set RECMAN_PLAYWRIGHT to a directory whose node_modules holds playwright-core and RECMAN_CHROMIUM to a chromium executable";

/// What a browser test needs: node, the directory whose `node_modules` holds playwright-core,
/// and the chromium executable.
#[derive(Clone, Debug)]
pub struct Browser {
    pub node: PathBuf,
    pub playwright: PathBuf,
    pub chromium: PathBuf,
}

impl Browser {
    /// Finds them: `RECMAN_PLAYWRIGHT`, else the tools cache (`RECMAN_TOOLS_DIR` or
    /// /var/cache/recman-tools) + `playwright`; `RECMAN_CHROMIUM`, else /usr/bin/chromium;
    /// node on the PATH. Panics naming what is missing and how to install it.
    pub fn find() -> Browser {
        let playwright = std::env::var_os("RECMAN_PLAYWRIGHT")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                std::env::var_os("RECMAN_TOOLS_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("/var/cache/recman-tools"))
                    .join("playwright")
            });
        let module = playwright.join("node_modules/playwright-core/package.json");
        assert!(
            module.is_file(),
            "missing prerequisite 'playwright': no {}; hint: {INSTALL_HINT}",
            module.display()
        );
        let chromium = std::env::var_os("RECMAN_CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
        assert!(
            chromium.is_file(),
            "missing prerequisite 'chromium': no {}; hint: {INSTALL_HINT}",
            chromium.display()
        );
        let node = std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join("node"))
                    .find(|p| p.is_file())
            })
            .unwrap_or_else(|| {
                panic!("missing prerequisite 'node' (on the PATH); hint: {INSTALL_HINT}")
            });
        Browser {
            node,
            playwright,
            chromium,
        }
    }
}
