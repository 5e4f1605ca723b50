/** `npm ci`'s postinstall (and `npm run lambda-native`): the native bindings every Lambda architecture's bundles carry (infra/lambda-native.ts). */
import { installNativeBindings } from './lambda-native.js';

installNativeBindings();
