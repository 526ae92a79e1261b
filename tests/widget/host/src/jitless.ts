/**
 * Zod compiles fast parsers with `new Function` unless told not to. The shim's code runs
 * inside the widget's document, whose CSP forbids evaluating strings (as it should), so
 * the shim turns that off; this module is imported first, before the SDK builds its schemas.
 */
import { config } from "zod";

config({ jitless: true });
