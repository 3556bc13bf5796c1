/**
 * Where this package is: the URL of a module at the top of `src/` (`dist/` once built), so that the
 * package directory is always `..` of it, whatever folder the code asking lives in. When the code is
 * bundled into another package (the aleph-sandbox CLI) it is the bundle's chunk, as before.
 */
export const PACKAGE_TOP_MODULE_URL: string = import.meta.url;
