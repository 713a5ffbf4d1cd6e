import { useEffect, useState } from "preact/hooks";
import { attributeChips, type Attributes } from "../attributes.js";

/**
 * The attribute filters in force, each a chip that removes itself, and (with `search`) the search
 * boxes: model name and error text, both case-insensitive substrings, applied on Enter or blur.
 */
export function AttributeBar({ attributes, onChange, search = false }: { attributes: Attributes; onChange: (a: Attributes) => void; search?: boolean }) {
  const [model, setModel] = useState(attributes.modelContains);
  const [error, setError] = useState(attributes.errorContains);
  useEffect(() => setModel(attributes.modelContains), [attributes.modelContains]);
  useEffect(() => setError(attributes.errorContains), [attributes.errorContains]);
  const apply = () => {
    if (model.trim() !== attributes.modelContains || error.trim() !== attributes.errorContains) {
      onChange({ ...attributes, modelContains: model.trim(), errorContains: error.trim() });
    }
  };
  const chips = attributeChips(attributes).filter((c) => !search || !/^(model|error) contains/.test(c.label));
  return (
    <div class="attribute-bar">
      {search && (
        <form
          class="row search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            apply();
          }}
        >
          <label>
            Search model
            <input name="search-model" type="search" placeholder="e.g. gpt-4o" value={model} onInput={(e) => setModel(e.currentTarget.value)} onBlur={apply} />
          </label>
          <label>
            Search error text
            <input name="search-error" type="search" placeholder="e.g. rate limit" value={error} onInput={(e) => setError(e.currentTarget.value)} onBlur={apply} />
          </label>
          <button type="submit">Search</button>
        </form>
      )}
      {chips.length > 0 && (
        <ul class="chips" aria-label="Attribute filters">
          {chips.map((chip) => (
            <li class="chip">
              {chip.label}
              <button type="button" class="link" aria-label={`Remove filter ${chip.label}`} onClick={() => onChange(chip.without)}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
