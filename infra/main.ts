/** The entry cdk.json runs: builds the app from context and writes the cloud assembly. */
import { offsetlakeApp } from './app.js';

offsetlakeApp().app.synth();
