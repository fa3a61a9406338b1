import { render } from 'preact';
import { parseConfig } from './lib/config';
import { describeError } from './lib/errors';
import { App } from './ui/app';
import './styles.css';

const root = document.getElementById('app')!;

// The runtime configuration comes with the deploy (or `npm start`), never with the build.
fetch('/config.json', { cache: 'no-store' })
  .then(async (response) => {
    if (!response.ok) throw new Error(`The console's configuration (/config.json) could not be loaded: ${response.status} ${response.statusText}.`);
    return parseConfig(await response.json());
  })
  .then((config) => render(<App config={config} />, root))
  .catch((error: unknown) => {
    const { title, lines } = describeError(error);
    root.innerHTML = '';
    const box = document.createElement('div');
    box.className = 'error';
    box.setAttribute('role', 'alert');
    box.textContent = [title, ...lines].join(' ');
    root.append(box);
  });
